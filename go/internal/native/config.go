package native

/*
#include "tinystore.h"

extern _Bool tsGoConfigCheck(uintptr_t ctx, uint8_t *json, size_t json_len, TsWhy *why);
extern void tsGoConfigRelease(uintptr_t ctx);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
)

// Config is an open config (KV-20): values, sources and patches cross as
// JSON text in the core's form.
type Config struct{ *handle }

// OpenConfig opens config name of s with the core's field description and
// layers, both JSON. check, when not nil, is the program's own check of a
// whole config (its JSON): the core runs it where it checks one, and an
// error refuses the config, for the error's text.
func OpenConfig(s *Store, name, fields, layers string, check func(json []byte) error) (*Config, error) {
	f, fl := text(fields)
	l, ll := text(layers)
	var v *C.TsValidate
	if check != nil {
		// The core releases the handle once it is done with the check.
		v = &C.TsValidate{
			check:   (*[0]byte)(C.tsGoConfigCheck),
			release: (*[0]byte)(C.tsGoConfigRelease),
			ctx:     C.uintptr_t(cgo.NewHandle(check)),
		}
	}
	return opened(s, name, func(p *C.TsStore, n *C.uint8_t, nl C.size_t, out **C.TsHandle, e **C.TsError) C.int32_t {
		return C.ts_config_open(p, n, nl, f, fl, l, ll, v, out, e)
	}, func(h *handle) *Config { return &Config{h} })
}

// Get is the whole config as JSON, from memory.
func (c *Config) Get() ([]byte, error) { return c.json(false) }

// Sources is each field's source, as a JSON list.
func (c *Config) Sources() ([]byte, error) { return c.json(true) }

// json reads the config's JSON (its sources, when sources is set), which
// the ABI hands out, and frees it.
func (c *Config) json(sources bool) ([]byte, error) {
	var p *C.uint8_t
	var n C.size_t
	err := c.answer(func(e **C.TsError) C.int32_t { return C.ts_config_json(c.ptr, C.bool(sources), &p, &n, e) })
	if err != nil {
		return nil, err
	}
	defer C.ts_bytes_free(p, n)
	return goBytes(p, n), nil
}

// Update checks and keeps the fields of patch (JSON) that change.
func (c *Config) Update(patch []byte) error {
	p, n := bytes(patch)
	return c.answer(func(e **C.TsError) C.int32_t { return C.ts_config_change(c.ptr, false, p, n, e) })
}

// Reset gives the field, or struct of fields, at path back to the layers.
func (c *Config) Reset(path string) error {
	p, n := text(path)
	return c.answer(func(e **C.TsError) C.int32_t { return C.ts_config_change(c.ptr, true, p, n, e) })
}

// answer runs a call of the config and converts its error; the config
// stays alive until the call returns.
func (c *Config) answer(call func(e **C.TsError) C.int32_t) error {
	var e *C.TsError
	rc := call(&e)
	runtime.KeepAlive(c)
	return failure(rc, e, nil)
}

// Generation grows with every change seen.
func (c *Config) Generation() uint64 {
	g := uint64(C.ts_config_generation(c.ptr))
	runtime.KeepAlive(c)
	return g
}

// Watch is a watch of the config's changes from now on; each step is the
// core's.
func (c *Config) Watch() (*ConfigWatch, error) {
	var ptr *C.TsHandle
	if err := c.answer(func(e **C.TsError) C.int32_t { return C.ts_config_watch(c.ptr, &ptr, e) }); err != nil {
		return nil, err
	}
	w := &ConfigWatch{&handle{store: c.store, Name: c.Name, ptr: ptr}}
	runtime.SetFinalizer(w.handle, func(h *handle) { C.ts_handle_free(h.ptr) })
	return w, nil
}

// ConfigWatch is a watch of a config's changes.
type ConfigWatch struct{ *handle }

// Next waits one step, blocking: 1 for a change, 0 for none yet, -1 when
// the watch is over.
func (w *ConfigWatch) Next() int {
	step := int(C.ts_config_watch_next(w.ptr))
	runtime.KeepAlive(w)
	return step
}
