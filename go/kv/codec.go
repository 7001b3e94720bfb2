package kv

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"tinyshed.org/tinystore/internal/native"
)

// codec maps a bucket's Go type onto the kinds of the C ABI, by the type's
// kind, named or not (KV-3): json.RawMessage as JSON; []byte and string
// as bytes; bool and integers up to 32 unsigned bits as an integer; uint64
// as eight bytes; floats as their bits; struct{} as nothing; Raw as it is;
// anything else as JSON.
// The core turns each kind into its row, so every language reads it.
type codec[T any] struct {
	kind native.Kind // how a value goes in
	want native.Kind // how a row is asked to read
	rt   reflect.Type
	// check says a take must decode inside its write: JSON, and integers
	// narrower than int64, can fail to decode after the core read the row.
	check bool
	// custom is the bucket's own codec (WithCodec), used in place of kind.
	custom Codec
}

func newCodec[T any]() *codec[T] {
	rt := reflect.TypeFor[T]()
	c := &codec[T]{rt: rt}
	switch {
	case rt == reflect.TypeFor[Raw]():
		c.kind, c.want = native.KindRaw, native.KindRaw
		return c
	case rt == reflect.TypeFor[json.RawMessage]():
		// A []byte by kind, but JSON by intent: checked, and read by the
		// other languages as JSON.
		c.kind, c.check = native.KindJSON, true
	case rt.Kind() == reflect.Slice && rt.Elem().Kind() == reflect.Uint8:
		c.kind = native.KindBytes
	case rt.Kind() == reflect.String:
		c.kind = native.KindText
	case rt.Kind() == reflect.Bool:
		c.kind = native.KindBool
	case rt.Kind() == reflect.Int64 || (rt.Kind() == reflect.Int && rt.Size() == 8):
		c.kind = native.KindInt
	case rt.Kind() >= reflect.Int && rt.Kind() <= reflect.Int32, rt.Kind() >= reflect.Uint8 && rt.Kind() <= reflect.Uint32:
		c.kind, c.check = native.KindInt, true
	case rt.Kind() == reflect.Uint64 || rt.Kind() == reflect.Uint || rt.Kind() == reflect.Uintptr:
		c.kind = native.KindUint64
	case rt.Kind() == reflect.Float64:
		c.kind = native.KindFloat
	case rt.Kind() == reflect.Float32:
		c.kind = native.KindFloat32
	case rt.Kind() == reflect.Struct && rt.NumField() == 0:
		c.kind = native.KindNull
	default:
		c.kind, c.check = native.KindJSON, true
	}
	c.want = c.kind
	return c
}

// encode gives v as the ABI takes it. Its bytes may alias v's memory: they
// are only read during the call.
func (c *codec[T]) encode(v T) (native.Value, error) {
	if c.custom != nil {
		return c.encodeCustom(v)
	}
	rv := reflect.ValueOf(&v).Elem()
	out := native.Value{Kind: c.kind}
	switch c.kind {
	case native.KindRaw:
		r := any(v).(Raw)
		switch r.Kind {
		case RawNull:
			out.Kind = native.KindNull
		case RawInt:
			out.Kind, out.Int = native.KindInt, r.Int
		case RawBytes:
			out.Kind, out.Bytes = native.KindBytes, r.Bytes
		default:
			return out, fmt.Errorf("a Raw of kind %d is none of RawNull, RawInt and RawBytes", r.Kind)
		}
	case native.KindNull:
	case native.KindBytes:
		out.Bytes = rv.Bytes()
	case native.KindText:
		s := rv.String()
		out.Bytes = unsafe.Slice(unsafe.StringData(s), len(s))
	case native.KindBool:
		if rv.Bool() {
			out.Int = 1
		}
	case native.KindInt:
		if rv.CanInt() {
			out.Int = rv.Int()
		} else {
			out.Int = int64(rv.Uint())
		}
	case native.KindUint64:
		out.Int = int64(rv.Uint())
	case native.KindFloat:
		out.Int = int64(math.Float64bits(rv.Float()))
	case native.KindFloat32:
		// Through a pointer, not rv.Float(): widening would quiet a
		// signalling NaN.
		out.Int = int64(math.Float32bits(*(*float32)(unsafe.Pointer(rv.UnsafeAddr()))))
	case native.KindJSON:
		b, err := json.Marshal(v)
		if err != nil {
			return out, jsonFault(err)
		}
		out.Bytes = b
	}
	return out, nil
}

// decode reads a row the core read as c.want. A value that does not fit T
// is an error, which the caller reports as ErrCorrupt naming the key.
func (c *codec[T]) decode(v native.Value) (T, error) {
	if c.custom != nil {
		return c.decodeCustom(v)
	}
	var out T
	rv := reflect.ValueOf(&out).Elem()
	switch c.kind {
	case native.KindRaw:
		r := Raw{Int: v.Int}
		switch v.Kind {
		case native.KindNull:
			r.Kind = RawNull
		case native.KindInt:
			r.Kind = RawInt
		default:
			r.Kind, r.Bytes = RawBytes, v.Bytes
		}
		rv.Set(reflect.ValueOf(r))
	case native.KindNull:
	case native.KindBytes:
		rv.SetBytes(v.Bytes)
	case native.KindText:
		rv.SetString(string(v.Bytes))
	case native.KindBool:
		rv.SetBool(v.Int == 1)
	case native.KindInt:
		if rv.CanInt() {
			if rv.OverflowInt(v.Int) {
				return out, c.rowFault(fmt.Sprintf("%d is out of its range", v.Int), nil)
			}
			rv.SetInt(v.Int)
		} else {
			if v.Int < 0 || rv.OverflowUint(uint64(v.Int)) {
				return out, c.rowFault(fmt.Sprintf("%d is out of its range", v.Int), nil)
			}
			rv.SetUint(uint64(v.Int))
		}
	case native.KindUint64:
		if rv.OverflowUint(uint64(v.Int)) {
			return out, c.rowFault(fmt.Sprintf("%d is out of its range", uint64(v.Int)), nil)
		}
		rv.SetUint(uint64(v.Int))
	case native.KindFloat:
		rv.SetFloat(math.Float64frombits(uint64(v.Int)))
	case native.KindFloat32:
		*(*float32)(unsafe.Pointer(rv.UnsafeAddr())) = math.Float32frombits(uint32(v.Int))
	case native.KindJSON:
		if err := json.Unmarshal(v.Bytes, &out); err != nil {
			if _, syntax := err.(*json.SyntaxError); syntax {
				return out, codecErr{native.CodecFault("json_decode", err.Error()), err}
			}
			return out, c.rowFault(err.Error(), err)
		}
	}
	return out, nil
}

// rowFault is a row that does not read as T, in the core's words,
// wrapping err when there is one.
func (c *codec[T]) rowFault(why string, err error) error {
	return codecErr{native.TypeFault("row_type", why, c.rt.String()), err}
}

// jsonFault is what encoding/json could not write, in the core's words.
func jsonFault(err error) error {
	if t, ok := err.(*json.UnsupportedTypeError); ok {
		return codecErr{native.CodecFault("json_type", t.Type.String()), err}
	}
	return codecErr{native.CodecFault("json_encode", err.Error()), err}
}
