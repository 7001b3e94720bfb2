package native

/*
#include "tinystore.h"
extern int32_t tsGoCheck(uint64_t ctx, TsValue *value);

// Get and Set keep no Go pointer past the call and call no Go function,
// so their answers can stay on the caller's stack: no allocation for them.
#cgo noescape ts_bucket_get
#cgo nocallback ts_bucket_get
#cgo noescape ts_bucket_set
#cgo nocallback ts_bucket_set
#cgo noescape ts_bucket_set_submit
#cgo nocallback ts_bucket_set_submit
*/
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"
)

// Kind is how a value crosses the ABI, and how a row is asked to read.
type Kind int32

// The kinds of the ABI (TS_KIND_* in tinystore.h).
const (
	KindNull    Kind = C.TS_KIND_NULL
	KindInt     Kind = C.TS_KIND_INT
	KindBytes   Kind = C.TS_KIND_BYTES
	KindText    Kind = C.TS_KIND_TEXT
	KindBool    Kind = C.TS_KIND_BOOL
	KindFloat   Kind = C.TS_KIND_FLOAT
	KindFloat32 Kind = C.TS_KIND_FLOAT32
	KindUint64  Kind = C.TS_KIND_UINT64
	KindJSON    Kind = C.TS_KIND_JSON
	KindRaw     Kind = C.TS_KIND_RAW
)

// Value is a value as it crosses: Kind says which of Int and Bytes holds it.
// Going in, Bytes is only read during the call.
type Value struct {
	Kind  Kind   // which of Int and Bytes holds the value
	Int   int64  // an integer, a bool, or the bits of a float or uint64
	Bytes []byte // bytes, text or JSON
}

// Entry is a key's value with its version and expiry.
type Entry struct {
	Key       string // in a listing only
	Value     Value  // read as the kind asked for
	Version   int64  // the revision that wrote it
	HasExpiry bool   // whether ExpiresMs holds a time
	ExpiresMs int64  // ms since the Unix epoch
}

// WriteOptions are a write's own options, as the caller gave them: the
// core checks their shape for each call (a TTL or a time, not both; what
// each call takes).
type WriteOptions struct {
	HasTTL       bool  // whether TTL applies
	TTL          int64 // ns from now
	HasAt        bool  // whether At applies
	At           int64 // ms since the Unix epoch
	HasIfVersion bool  // whether IfVersion applies
	IfVersion    int64 // the version the write expects
}

func (o WriteOptions) c() C.TsWriteOptions {
	return C.TsWriteOptions{
		has_ttl: C.bool(o.HasTTL), ttl_ns: C.int64_t(o.TTL),
		has_at: C.bool(o.HasAt), at_ms: C.int64_t(o.At),
		has_if_version: C.bool(o.HasIfVersion), if_version: C.int64_t(o.IfVersion),
	}
}

// Bucket is an open bucket's handle. It holds the core's store, so it
// works until the store is closed; its memory is freed by a finalizer,
// since a bucket holds nothing else.
type Bucket struct {
	handle
	ptr *C.TsBucket
}

// OpenBucket opens the bucket name of s.
func OpenBucket(s *Store, name string, ttl time.Duration, hasTTL bool, idle time.Duration, hasIdle bool) (*Bucket, error) {
	return opened(s, name, func(p *C.TsStore, n *C.uint8_t, l C.size_t, out **C.TsBucket, e **C.TsError) C.int32_t {
		return C.ts_bucket_open(p, n, l, C.int64_t(ttl), C.bool(hasTTL), C.int64_t(idle), C.bool(hasIdle), out, e)
	}, func(h handle, p *C.TsBucket) *Bucket { return &Bucket{h, p} }, func(b *Bucket) { C.ts_bucket_free(b.ptr) })
}

// value converts a value whose bytes the caller owns, and frees them.
func value(v *C.TsValue) Value {
	out := Value{Kind: Kind(v.kind), Int: int64(v.integer)}
	if v.bytes != nil {
		out.Bytes = goBytes(v.bytes, v.len)
		C.ts_bytes_free(v.bytes, v.len)
	} else if out.Kind == KindBytes || out.Kind == KindText || out.Kind == KindJSON {
		out.Bytes = []byte{}
	}
	return out
}

// entry converts an entry whose bytes the caller owns, and frees them.
func entry(e *C.TsEntry) Entry {
	return Entry{
		Value:     value(&e.value),
		Version:   int64(e.version),
		HasExpiry: bool(e.has_expiry),
		ExpiresMs: int64(e.expires_ms),
	}
}

// Get reads a live key as want in scope s (nil: the store itself, where
// an idle bucket's key is renewed).
func (b *Bucket) Get(ctx context.Context, s *Scope, owners []byte, key string, want Kind) (Entry, bool, error) {
	var out C.TsEntry
	var found C.bool
	err := b.onKey(ctx, s, false, owners, key, func(a at) C.int32_t {
		return C.ts_bucket_get(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, C.int32_t(want), &out, &found, a.e)
	})
	return foundEntry(found, &out, err)
}

// foundEntry is the entry of a read that found one, converted and freed.
func foundEntry(found C.bool, out *C.TsEntry, err error) (Entry, bool, error) {
	if err != nil || !bool(found) {
		return Entry{}, false, err
	}
	return entry(out), true, nil
}

// Has says whether a live key is there in scope s.
func (b *Bucket) Has(ctx context.Context, s *Scope, owners []byte, key string) (bool, error) {
	var found C.bool
	err := b.onKey(ctx, s, false, owners, key, func(a at) C.int32_t {
		return C.ts_bucket_has(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, &found, a.e)
	})
	return bool(found), err
}

// setsInFlight counts the Sets of the process between their start and
// their answer.
var setsInFlight atomic.Int64

// SetsInFlight is how many Sets have started and not yet been answered.
// For tests that must know their Sets are waiting on the writer.
func SetsInFlight() int64 { return setsInFlight.Load() }

// Set writes a value in scope s and returns its version. On the store
// alone, it waits for its answer in cgo, woken by the writer itself. With
// other Sets in flight, it submits the write and waits on a channel (see
// answers.go), not in a thread parked in cgo: the writer then wakes one
// thread for the group. (Alone, the channel would cost a second wake-up:
// the writer wakes the drainer, which wakes this goroutine.)
func (b *Bucket) Set(ctx context.Context, s *Scope, owners []byte, key string, v Value, opts WriteOptions) (int64, error) {
	if s != nil {
		return b.setBlocking(ctx, s, owners, key, v, opts)
	}
	if err := b.begin(ctx); err != nil {
		return 0, err
	}
	defer setsInFlight.Add(-1)
	if setsInFlight.Add(1) == 1 {
		return b.setBlocking(ctx, nil, owners, key, v, opts)
	}
	o, ol := bytes(owners)
	k, kl := text(key)
	vb, vl := bytes(v.Bytes)
	co := opts.c()
	q := answerQueue()
	sl := takeSlot()
	defer putSlot(sl)
	done := ctx.Done()
	var c *C.TsCancel
	if done != nil {
		c = C.ts_cancel_new()
		defer C.ts_cancel_free(c) // after the answer: the write may fire it till then
	}
	var answered C.bool
	var version C.int64_t
	var e *C.TsError
	rc := C.ts_bucket_set_submit(b.ptr, o, ol, k, kl, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &co, c,
		q, C.uint64_t(sl.token), &answered, &version, &e)
	runtime.KeepAlive(v.Bytes) // copied by the submit
	if rc != C.TS_OK || bool(answered) {
		runtime.KeepAlive(b)
		return int64(version), failure(rc, e, ctx)
	}
	var r reply
	if done == nil {
		r = <-sl.ch
	} else {
		select {
		case r = <-sl.ch:
		case <-done:
			// Gives up on the write if its group has not started; either
			// way it is answered, Cancelled or with what it did.
			C.ts_cancel_fire(c)
			cancelsFired.Add(1)
			r = <-sl.ch
		}
	}
	runtime.KeepAlive(b)
	return r.version, failure(r.code, r.err, ctx)
}

// setBlocking is Set waiting for its answer in cgo.
func (b *Bucket) setBlocking(ctx context.Context, s *Scope, owners []byte, key string, v Value, opts WriteOptions) (int64, error) {
	vb, vl := bytes(v.Bytes)
	co := opts.c()
	var version C.int64_t
	err := b.onKey(ctx, s, true, owners, key, func(a at) C.int32_t {
		return C.ts_bucket_set(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &co, a.cn, &version, a.e)
	})
	runtime.KeepAlive(v.Bytes)
	return int64(version), err
}

// Create writes a value in scope s only if the key is absent: written says
// whether it did. e is the key's entry either way: the one written (its
// version and expiry; its Value is the zero Value, v being the caller's),
// or the live one found, read as want.
func (b *Bucket) Create(ctx context.Context, s *Scope, owners []byte, key string, v Value, opts WriteOptions, want Kind) (written bool, e Entry, err error) {
	vb, vl := bytes(v.Bytes)
	co := opts.c()
	var w C.bool
	var out C.TsEntry
	err = b.onKey(ctx, s, true, owners, key, func(a at) C.int32_t {
		return C.ts_bucket_create(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, C.int32_t(v.Kind), C.int64_t(v.Int), vb, vl, &co, C.int32_t(want), a.cn, &w, &out, a.e)
	})
	runtime.KeepAlive(v.Bytes)
	if err != nil {
		return false, Entry{}, err
	}
	return bool(w), entry(&out), nil
}

// checkFunc is what a take's check callback runs: whether the value decodes.
type checkFunc func(Value) bool

//export tsGoCheck
func tsGoCheck(ctx C.uint64_t, v *C.TsValue) (bad C.int32_t) {
	defer func() {
		if recover() != nil {
			bad = 1 // a decoder that panics: the value is corrupt and stays
		}
	}()
	f := cgo.Handle(ctx).Value().(checkFunc)
	val := Value{Kind: Kind(v.kind), Int: int64(v.integer)}
	if v.bytes != nil {
		// Borrowed for the callback only; a decoder copies what it keeps.
		val.Bytes = unsafe.Slice((*byte)(unsafe.Pointer(v.bytes)), int(v.len))
	} else {
		val.Bytes = []byte{}
	}
	if f(val) {
		return 0
	}
	return 1
}

// Take reads and deletes a key in one write, in scope s. check, when not
// nil, runs inside the write on the value read as want: false keeps the
// value and makes the take Corrupt.
func (b *Bucket) Take(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions, want Kind, check func(Value) bool) (Entry, bool, error) {
	co := opts.c()
	var fn C.TsCheckFn
	var h cgo.Handle
	if check != nil {
		h = cgo.NewHandle(checkFunc(check))
		defer h.Delete()
		fn = C.TsCheckFn(C.tsGoCheck)
	}
	var out C.TsEntry
	var found C.bool
	err := b.onKey(ctx, s, true, owners, key, func(a at) C.int32_t {
		return C.ts_bucket_take(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, &co, C.int32_t(want), fn, C.uint64_t(h), a.cn, &out, &found, a.e)
	})
	return foundEntry(found, &out, err)
}

// Delete deletes a key in scope s and says whether a live key was there.
func (b *Bucket) Delete(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions) (bool, error) {
	return b.change(ctx, s, owners, key, opts, false)
}

// Expire gives a live key the options' expiry in scope s and says whether
// it was there.
func (b *Bucket) Expire(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions) (bool, error) {
	return b.change(ctx, s, owners, key, opts, true)
}

// change is Delete, or Expire when expire is set: the two calls take the
// same arguments and answer whether a live key was there.
func (b *Bucket) change(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions, expire bool) (bool, error) {
	co := opts.c()
	var found C.bool
	err := b.onKey(ctx, s, true, owners, key, func(a at) C.int32_t {
		if expire {
			return C.ts_bucket_expire(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, &co, a.cn, &found, a.e)
		}
		return C.ts_bucket_delete(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, &co, a.cn, &found, a.e)
	})
	return bool(found), err
}

// Clear removes the branch of owners and every branch under it, in scope s.
func (b *Bucket) Clear(ctx context.Context, s *Scope, owners []byte) error {
	o, ol := bytes(owners)
	return b.call(ctx, s, true, func(sc *C.TsScope, cn *C.TsCancel, e **C.TsError) C.int32_t {
		return C.ts_bucket_clear(b.ptr, sc, o, ol, cn, e)
	})
}

// List reads a page of the branch's own keys in scope s, after `after`
// (when hasAfter), at most limit (0 for the default); next is the cursor
// of the next page.
func (b *Bucket) List(ctx context.Context, s *Scope, owners []byte, after string, hasAfter bool, limit int, want Kind) (entries []Entry, next string, more bool, err error) {
	if limit < 0 || limit > 1<<31 {
		limit = 1 << 31 // the core refuses it, naming the limit
	}
	o, ol := bytes(owners)
	a, al := text(after)
	var page *C.TsPage
	err = b.call(ctx, s, false, func(sc *C.TsScope, _ *C.TsCancel, e **C.TsError) C.int32_t {
		return C.ts_bucket_list(b.ptr, sc, o, ol, a, al, C.bool(hasAfter), C.uint32_t(limit), C.int32_t(want), &page, e)
	})
	if err != nil {
		return nil, "", false, err
	}
	entries, next, more = readPage(page)
	return entries, next, more, nil
}

// readPage converts a page and frees it: its entries, and the cursor of
// the next page (more is false on the last).
func readPage(page *C.TsPage) (entries []Entry, next string, more bool) {
	defer C.ts_page_free(page)
	n := int(C.ts_page_len(page))
	entries = make([]Entry, 0, n)
	for i := range n {
		var ce C.TsEntry
		if !bool(C.ts_page_entry(page, C.size_t(i), &ce)) {
			break
		}
		en := Entry{
			Key:       string(goBytes(ce.key, ce.key_len)),
			Value:     Value{Kind: Kind(ce.value.kind), Int: int64(ce.value.integer)},
			Version:   int64(ce.version),
			HasExpiry: bool(ce.has_expiry),
			ExpiresMs: int64(ce.expires_ms),
		}
		if en.Value.Kind == KindBytes || en.Value.Kind == KindText || en.Value.Kind == KindJSON {
			en.Value.Bytes = goBytes(ce.value.bytes, ce.value.len)
		}
		entries = append(entries, en)
	}
	var nk *C.uint8_t
	var nl C.size_t
	if bool(C.ts_page_next(page, &nk, &nl)) {
		return entries, string(goBytes(nk, nl)), true
	}
	return entries, "", false
}

// MadeAtKey builds an error about one key of the handle name that the
// caller found itself, naming the handle and path as the core does.
func MadeAtKey(name string, owners []byte, key string, code int, message string) error {
	n, nl := text(name)
	o, ol := bytes(owners)
	k, kl := text(key)
	m, ml := text(message)
	var e *C.TsError
	rc := C.ts_key_error(n, nl, o, ol, k, kl, C.int32_t(code), m, ml, &e)
	return failure(rc, e, nil)
}
