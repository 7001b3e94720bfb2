package kv

import (
	"fmt"
	"reflect"
	"strconv"
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

// appendOwner adds an owner to an encoded branch: a little-endian u32
// length and the bytes, as the C ABI reads owners.
func appendOwner(enc []byte, owner string) []byte {
	n := len(owner)
	enc = append(enc, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(enc, owner...)
}
