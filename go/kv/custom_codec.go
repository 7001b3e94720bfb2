package kv

import (
	"errors"
	"fmt"

	"tinyshed.org/tinystore/internal/native"
)

// Codec encodes and decodes a bucket's values in place of the choice by
// type: OpenBucket with WithCodec(c). What Encode gives is kept as a byte
// row; Decode reads it back. An Encode error is tinystore.ErrInvalid and
// writes nothing. A Decode error, or a panic, is tinystore.ErrCorrupt
// naming the key, and a Take of such a value leaves it in place, since the
// Take decodes inside its write. encoding/json, a CBOR or a msgpack library
// fit it with two one-line methods.
type Codec interface {
	// Encode gives the bytes that keep value, a T of the bucket.
	Encode(value any) ([]byte, error)
	// Decode reads data into into, a *T of the bucket.
	Decode(data []byte, into any) error
}

// CodecOption gives a bucket its own codec: see WithCodec.
type CodecOption struct{ c Codec }

// WithCodec gives a bucket its own codec in place of the choice by type.
//
//	points, err := kv.OpenBucket[Point](store, "points", kv.WithCodec(pointText{}))
func WithCodec(c Codec) CodecOption { return CodecOption{c} }

func (o CodecOption) applyBucket(c *bucketConfig) { c.codec = o.c }

// withCustom makes c keep its values through the user's codec: bytes in,
// and rows read by the core's rule for a codec, which refuses a row of
// another kind, inside a Take too.
func (c *codec[T]) withCustom(custom Codec) *codec[T] {
	return &codec[T]{kind: native.KindBytes, want: native.KindCodec, rt: c.rt, check: true, custom: custom}
}

func (c *codec[T]) encodeCustom(v T) (out native.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New(native.CodecFault("encode", fmt.Sprintf("it panicked: %v", p)))
		}
	}()
	b, err := c.custom.Encode(v)
	if err != nil {
		return out, codecErr{native.CodecFault("encode", err.Error()), err}
	}
	if b == nil {
		b = []byte{}
	}
	return native.Value{Kind: native.KindBytes, Bytes: b}, nil
}

func (c *codec[T]) decodeCustom(v native.Value) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New(native.CodecFault("decode", fmt.Sprintf("it panicked: %v", p)))
		}
	}()
	if err := c.custom.Decode(v.Bytes, &out); err != nil {
		return out, codecErr{native.CodecFault("decode", err.Error()), err}
	}
	return out, nil
}

// codecErr is a codec's own error in the core's words, wrapping it so that
// errors.Is still finds it.
type codecErr struct {
	text string
	err  error
}

func (e codecErr) Error() string { return e.text }
func (e codecErr) Unwrap() error { return e.err }
