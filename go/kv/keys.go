package kv

import (
	"fmt"
	"reflect"
	"strconv"

	"tinyshed.org/tinystore/internal/native"
)

// keyText gives the text of a key or owner: a string, a []byte, or an
// integer, which is its decimal spelling, so 42 and "42" are one key (KV-1).
func keyText(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, true
	case []byte:
		return string(k), true
	case int:
		return strconv.Itoa(k), true
	case int64:
		return strconv.FormatInt(k, 10), true
	case int32:
		return strconv.FormatInt(int64(k), 10), true
	case uint64:
		return strconv.FormatUint(k, 10), true
	}
	rv := reflect.ValueOf(k)
	switch {
	case !rv.IsValid():
		return "", false
	case rv.Kind() == reflect.String:
		return rv.String(), true
	case rv.CanInt():
		return strconv.FormatInt(rv.Int(), 10), true
	case rv.CanUint():
		return strconv.FormatUint(rv.Uint(), 10), true
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
		return string(rv.Bytes()), true
	}
	return "", false
}

// notAKey says why k cannot be a key or owner.
func notAKey(what string, k any) string {
	return fmt.Sprintf("%s is a string, a []byte or an integer, not %T", what, k)
}

// branch is what every handle of package kv shares: its name and the
// owners of its branch, encoded for the C ABI.
type branch struct {
	name   string
	owners []byte
	err    error // a bad owner given to Under, returned by every call
}

// under is the branch of owners under b.
func (b branch) under(owners []any) branch {
	out := branch{name: b.name, err: b.err}
	out.owners = append(make([]byte, 0, len(b.owners)+16*len(owners)), b.owners...)
	for _, o := range owners {
		t, ok := keyText(o)
		if !ok && out.err == nil {
			out.err = invalid(b.name, notAKey("an owner", o))
		}
		out.owners = native.AppendOwner(out.owners, t)
	}
	return out
}

// key gives the text of a key of this branch, or why it cannot be one.
func (b branch) key(k any) (string, error) {
	if b.err != nil {
		return "", b.err
	}
	t, ok := keyText(k)
	if !ok {
		return "", invalid(b.name, notAKey("a key", k))
	}
	return t, nil
}

// keyErr is an error about key k of this branch, named as the core names it.
func (b branch) keyErr(k string, code int, err error) error {
	return native.MadeAtKey(b.name, b.owners, k, code, err.Error())
}

// opened is the handle that wrap makes of h, the native handle of name,
// or the error of opening it.
func opened[N, H any](name string, h N, err error, wrap func(branch, N) *H) (*H, error) {
	if err != nil {
		return nil, err
	}
	return wrap(branch{name: name}, h), nil
}
