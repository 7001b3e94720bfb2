package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/native"
)

// Config is typed settings of struct type T (KV-20), from layers in order:
// Defaults, then FromEnv (its .env files, then the process's environment
// over them), then the updates kept in kv.db field by field, which every
// handle, in this process or another, sees. Safe for concurrent use.
//
// A field is its path, the JSON names of the field and the structs above it
// (limits.rps), and its variable, the prefix and the path in upper snake
// case (APP_LIMITS_RPS) or its env:"NAME" tag. Tags secret:"true" and
// required:"true" mark the field. A time.Duration is a duration, a slice a
// list, a nested struct a struct of fields; a map or interface is JSON.
// The layering, the parsing of variables, the checks and the kept rows are
// the engine's, the same in every language.
type Config[T any] struct {
	h     *native.Config
	shape shape

	mu     sync.Mutex
	gen    uint64
	cached T
}

// ConfigOption is an option of OpenConfig.
type ConfigOption interface{ applyConfig(*configSpec) }

// configSpec is the layers in the order given: a Defaults value, or an
// *envSpec. The core reads the environment where it stands, and refuses a
// second one.
type configSpec struct {
	layers []any
	// vars are EnvVars', read by the environment layer.
	vars map[string]string
}

type envSpec struct {
	prefix string
	files  []string
}

type configOption func(*configSpec)

func (f configOption) applyConfig(s *configSpec) { f(s) }

// Defaults is a layer of defaults: a T, which sets every field, or a
// map[string]any (as a JSON or YAML library reads a file), which sets the
// fields it names. Later layers are over earlier ones.
func Defaults(v any) ConfigOption {
	return configOption(func(s *configSpec) { s.layers = append(s.layers, v) })
}

// FromEnv reads the environment: the .env files (a later one over an
// earlier; a missing one is skipped), then the process's variables, each
// named prefix_PATH. No variable is read without it. It stands where it is
// given among the layers: over the Defaults before it, under those after.
func FromEnv(prefix string, files ...string) ConfigOption {
	return configOption(func(s *configSpec) {
		s.layers = append(s.layers, &envSpec{prefix, files})
	})
}

// EnvVars makes FromEnv read vars instead of the process's environment;
// without FromEnv, they are read with no prefix, over every Defaults.
func EnvVars(vars map[string]string) ConfigOption {
	return configOption(func(s *configSpec) { s.vars = vars })
}

// Source says where a field's value came from.
type Source struct {
	// Path is the field's path, as limits.rps.
	Path string `json:"path"`
	// From is "default", "defaults", "env_file", "env" or "kept".
	From string `json:"from"`
	// Var is the variable, for env and env_file.
	Var string `json:"var,omitempty"`
	// File is the .env file, for env_file.
	File string `json:"file,omitempty"`
	// Layer is which Defaults, for defaults.
	Layer int `json:"layer,omitempty"`
	// Version is the version that kept it, for kept.
	Version string `json:"version,omitempty"`
	// LeftOut says why a value kept for the field was left out, if one was.
	LeftOut string `json:"leftOut,omitempty"`
}

type fieldDesc struct {
	Path     string `json:"path"`
	Type     string `json:"type"`
	Secret   bool   `json:"secret"`
	Required bool   `json:"required"`
	Env      string `json:"env,omitempty"`
}

var durationType = reflect.TypeFor[time.Duration]()

// engineType is the engine's type of a Go type; "" for a struct of fields.
func engineType(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "str"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Slice, reflect.Array:
		item := engineType(t.Elem())
		if item == "" || strings.HasPrefix(item, "list:") {
			item = "json"
		}
		return "list:" + item
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return "json"
		}
		return ""
	}
	return "json"
}

// describe lists the fields of struct type t under path at, as
// encoding/json names them.
func describe(t reflect.Type, at string, out *[]fieldDesc, durations *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		path := at + name
		et := engineType(f.Type)
		if et == "" {
			describe(f.Type, path+".", out, durations)
			continue
		}
		if et == "duration" {
			*durations = append(*durations, path)
		}
		*out = append(*out, fieldDesc{
			Path: path, Type: et,
			Secret: f.Tag.Get("secret") == "true", Required: f.Tag.Get("required") == "true",
			Env: f.Tag.Get("env"),
		})
	}
}

// scale multiplies the number at each duration path of a decoded JSON tree
// by k (nanoseconds to milliseconds and back).
func scale(tree any, durations []string, k float64) {
	for _, p := range durations {
		m, last, ok := parentOf(tree, p)
		if !ok {
			continue
		}
		if n, isNum := m[last].(float64); isNum {
			m[last] = int64(math.Round(n * k))
		}
	}
}

// shape is what the engine's form of a T needs to know of T's fields.
type shape struct {
	durations []string // paths of time.Duration fields
	lists     []string // paths of slice and array fields
}

// toEngine is v in the engine's form: JSON with durations in milliseconds
// and a nil slice as the empty list it means.
func toEngine(v any, sh shape) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	if _, isT := v.(map[string]any); !isT {
		scale(tree, sh.durations, 1e-6)
		emptyNilLists(tree, sh.lists)
	}
	return tree, nil
}

// emptyNilLists makes each null at a list's path of a decoded JSON tree an
// empty list: encoding/json writes a nil slice as null.
func emptyNilLists(tree any, lists []string) {
	for _, p := range lists {
		m, last, ok := parentOf(tree, p)
		if ok {
			if v, has := m[last]; has && v == nil {
				m[last] = []any{}
			}
		}
	}
}

// parentOf is the object holding the last part of path p in tree, and that part.
func parentOf(tree any, p string) (map[string]any, string, bool) {
	parts := strings.Split(p, ".")
	m, ok := tree.(map[string]any)
	for _, part := range parts[:len(parts)-1] {
		if !ok {
			break
		}
		m, ok = m[part].(map[string]any)
	}
	return m, parts[len(parts)-1], ok
}

func configInvalid(name, format string, a ...any) error {
	return fmt.Errorf("%w: config %q: %s", tinystore.ErrInvalid, name, fmt.Sprintf(format, a...))
}

// OpenConfig opens config name of store, of struct type T, from the layers
// in the order given. Every variable that does not read as its field's
// type and every required field the layers leave empty is named, by its
// variable, in one tinystore.ErrInvalid; so are layers T's Validate refuses.
//
//	settings, err := kv.OpenConfig[Settings](store, "app",
//		kv.Defaults(Settings{Port: 8080}), kv.FromEnv("APP", ".env"))
func OpenConfig[T any](store *tinystore.Store, name string, opts ...ConfigOption) (*Config[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, configInvalid(name, "%s is not a struct", t)
	}
	var spec configSpec
	for _, o := range opts {
		o.applyConfig(&spec)
	}
	var fields []fieldDesc
	var sh shape
	describe(t, "", &fields, &sh.durations)
	for _, f := range fields {
		if strings.HasPrefix(f.Type, "list:") {
			sh.lists = append(sh.lists, f.Path)
		}
	}
	isEnv := func(l any) bool { _, ok := l.(*envSpec); return ok }
	if spec.vars != nil && !slices.ContainsFunc(spec.layers, isEnv) {
		spec.layers = append(spec.layers, &envSpec{})
	}
	layers := make([]map[string]any, 0, len(spec.layers))
	for _, l := range spec.layers {
		env, ok := l.(*envSpec)
		if !ok {
			tree, err := toEngine(l, sh)
			if err != nil {
				return nil, configInvalid(name, "a Defaults layer does not marshal: %v", err)
			}
			layers = append(layers, map[string]any{"defaults": tree})
			continue
		}
		vars := spec.vars
		if vars == nil {
			vars = map[string]string{}
			for _, kv := range os.Environ() {
				if k, v, ok := strings.Cut(kv, "="); ok {
					vars[k] = v
				}
			}
		}
		layers = append(layers, map[string]any{"env": map[string]any{"prefix": env.prefix, "files": env.files, "vars": vars}})
	}
	fj, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	lj, err := json.Marshal(map[string]any{"layers": layers})
	if err != nil {
		return nil, configInvalid(name, "a layer does not marshal: %v", err)
	}
	var check func([]byte) error
	if _, ok := any(new(T)).(interface{ Validate() error }); ok {
		check = func(b []byte) error {
			t, err := decodeAs[T](sh, b)
			if err != nil {
				return err
			}
			return any(&t).(interface{ Validate() error }).Validate()
		}
	}
	h, err := native.OpenConfig((*native.Store)(store), name, string(fj), string(lj), check)
	if err != nil {
		return nil, err
	}
	c := &Config[T]{h: h, shape: sh}
	if _, err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads the config as T, from the engine's memory, once a change.
func (c *Config[T]) load() (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.h.Generation()
	if g == c.gen && g != 0 {
		return c.cached, nil
	}
	var zero T
	b, err := c.h.Get()
	if err != nil {
		return zero, err
	}
	t, err := decodeAs[T](c.shape, b)
	if err != nil {
		return zero, err
	}
	c.gen, c.cached = g, t
	return t, nil
}

// decodeAs reads the core's JSON of a config of shape sh as a T.
func decodeAs[T any](sh shape, b []byte) (T, error) {
	var t T
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return t, err
	}
	scale(tree, sh.durations, 1e6)
	b, err := json.Marshal(tree)
	if err != nil {
		return t, err
	}
	err = json.Unmarshal(b, &t)
	return t, err
}

// Get is the settings now, from memory. It is a copy only at its top
// level: treat its slices and maps as read-only. When T's Validate refuses
// the kept values together, they are all left out, and Sources says why.
func (c *Config[T]) Get() T {
	t, _ := c.load()
	return t
}

// Update changes a copy of the settings with change, checks the result by
// its fields' types and, when T has a Validate() error method, by it, and
// keeps the fields that changed, in one durable write; every handle sees
// it at once. A value of the wrong type, a secret field, an emptied
// required field or a refusal is tinystore.ErrInvalid, and nothing is written.
func (c *Config[T]) Update(ctx context.Context, change func(*T)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := c.load()
	if err != nil {
		return err
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	var next T
	if err := json.Unmarshal(b, &next); err != nil {
		return err
	}
	change(&next)
	tree, err := toEngine(next, c.shape)
	if err != nil {
		return configInvalid(c.h.Name, "the settings do not marshal: %v", err)
	}
	patch, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return c.h.Update(patch)
}

// Reset gives the field at path, or every field of the struct there, back
// to the layers under the kept updates.
func (c *Config[T]) Reset(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.h.Reset(path)
}

// Sources says where each field's value came from; secret fields are not
// listed.
func (c *Config[T]) Sources() ([]Source, error) {
	b, err := c.h.Sources()
	if err != nil {
		return nil, err
	}
	var out []Source
	err = json.Unmarshal(b, &out)
	return out, err
}

// Watch yields the settings after every change from now on, by any handle
// or process (another process's within a second); a watcher behind skips
// to the latest. It ends when ctx ends or the store closes.
//
//	for s := range settings.Watch(ctx) { server.SetRate(s.Limits.RPS) }
func (c *Config[T]) Watch(ctx context.Context) iter.Seq[T] {
	steps, err := c.h.Watch()
	return func(yield func(T) bool) {
		// The core decides each step; a step waits a bounded time, so
		// ctx's end is heard within it.
		for err == nil && ctx.Err() == nil {
			switch steps.Next() {
			case 1:
				t, err := c.load()
				if err != nil || !yield(t) {
					return
				}
			case -1:
				return
			}
		}
	}
}
