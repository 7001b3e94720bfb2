// Package native calls the C ABI of TinyStore (bindings/c) through cgo.
//
// It converts Go values to the ABI's arguments and its answers back, and
// keeps handles alive across calls; every rule lives in the core. The
// public packages tinystore and kv give the API its Go shape.
//
// The static library is linked by its path, so that a shared library
// beside it is never picked. In the repository `make go-lib` builds it into
// lib/GOOS_GOARCH/ and copies the ABI's header beside this file; the module
// that a release publishes carries both, for linux/amd64, so that `go get`
// builds with cgo and no Rust.
package native

/*
#cgo linux,amd64 LDFLAGS: ${SRCDIR}/lib/linux_amd64/libtinystore.a
#cgo linux,arm64 LDFLAGS: ${SRCDIR}/lib/linux_arm64/libtinystore.a
#cgo darwin,amd64 LDFLAGS: ${SRCDIR}/lib/darwin_amd64/libtinystore.a
#cgo darwin,arm64 LDFLAGS: ${SRCDIR}/lib/darwin_arm64/libtinystore.a
#cgo LDFLAGS: -lm -ldl -lpthread
#include <stdlib.h>
#include "tinystore.h"
*/
import "C"

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// Error codes of the ABI, one per error kind of the core.
const (
	CodeInvalid        = int(C.TS_INVALID)
	CodeLimit          = int(C.TS_LIMIT)
	CodeConflict       = int(C.TS_CONFLICT)
	CodeCorrupt        = int(C.TS_CORRUPT)
	CodeClosed         = int(C.TS_CLOSED)
	CodeOutcomeUnknown = int(C.TS_OUTCOME_UNKNOWN)
	CodeIO             = int(C.TS_IO)
	CodeCancelled      = int(C.TS_CANCELLED)
)

// Made is an error the Go package found itself, about the handle bucket
// when it is not empty: the core builds it, so that its text reads as
// every error of the core does.
func Made(code int, message, bucket string) error {
	return made(code, message, bucket, nil)
}

// CodecFault is the core's message for a fault of a bucket's own codec
// or of JSON (word "encode", "decode", "row_not_bytes", "json_type", ...),
// so that every language words it alike.
func CodecFault(word, detail string) string {
	return TypeFault(word, detail, "")
}

// TypeFault is the core's message for a value, or a row, not of the
// handle's type ty (word "value_type" or "row_type").
func TypeFault(word, detail, ty string) string {
	w, wl := text(word)
	d, dl := text(detail)
	t, tl := text(ty)
	var e *C.TsError
	rc := C.ts_codec_fault(w, wl, d, dl, t, tl, &e)
	if rc == C.TS_OK {
		return detail
	}
	defer C.ts_error_free(e)
	var v C.TsErrorView
	C.ts_error_view(e, &v)
	return C.GoStringN((*C.char)(unsafe.Pointer(v.message)), C.int(v.message_len))
}

// Refusal is the core's error code and text for a refusal the Go package
// finds before its call reaches the core (word "tx_ended", "view_ended",
// ...: see tinystore::Refusal::named), so that every language words it
// alike.
func Refusal(word, detail string) (int, string) {
	w, wl := text(word)
	d, dl := text(detail)
	var e *C.TsError
	rc := C.ts_refusal(w, wl, d, dl, &e)
	if rc == C.TS_OK {
		return CodeInvalid, detail
	}
	defer C.ts_error_free(e)
	var v C.TsErrorView
	C.ts_error_view(e, &v)
	return int(v.code), C.GoStringN((*C.char)(unsafe.Pointer(v.message)), C.int(v.message_len))
}

// Refused is the error of Refusal(word, detail), about the handle bucket
// when it is not empty.
func Refused(word, detail, bucket string) error {
	code, message := Refusal(word, detail)
	return made(code, message, bucket, nil)
}

func made(code int, message, bucket string, ctx context.Context) error {
	n, nl := text(bucket)
	m, ml := text(message)
	var e *C.TsError
	rc := C.ts_error_new(n, nl, nil, 0, nil, 0, C.int32_t(code), m, ml, &e)
	return failure(rc, e, ctx)
}

// Cancelled is the error of a call whose context ended before it started.
func Cancelled(ctx context.Context, bucket string) error {
	code, message := Refusal("cancelled_before_start", "")
	return made(code, message, bucket, ctx)
}

// failure converts the ABI's error and frees it.
func failure(rc C.int32_t, e *C.TsError, ctx context.Context) error {
	if rc == C.TS_OK {
		return nil
	}
	if e == nil {
		return NewError(int(rc), "no message", "", "no message", nil)
	}
	defer C.ts_error_free(e)
	var v C.TsErrorView
	C.ts_error_view(e, &v)
	message := C.GoStringN((*C.char)(unsafe.Pointer(v.message)), C.int(v.message_len))
	var bucket string
	if v.bucket != nil {
		bucket = C.GoStringN((*C.char)(unsafe.Pointer(v.bucket)), C.int(v.bucket_len))
	}
	shown := C.GoStringN((*C.char)(unsafe.Pointer(v.text)), C.int(v.text_len))
	var cause error
	if int(v.code) == CodeCancelled && ctx != nil {
		cause = ctx.Err()
	}
	err := NewError(int(v.code), message, bucket, shown, cause)
	if v.path != nil {
		return &KeyError{Bucket: bucket, Path: C.GoStringN((*C.char)(unsafe.Pointer(v.path)), C.int(v.path_len)), Err: err}
	}
	return err
}

// text passes a Go string's bytes to C for the length of one call; cgo
// pins them meanwhile, and they hold no Go pointers.
func text(s string) (*C.uint8_t, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// bytes passes a byte slice to C for the length of one call.
func bytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

// goBytes copies n bytes at p.
func goBytes(p *C.uint8_t, n C.size_t) []byte {
	if p == nil || n == 0 {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}

// cancelsFired counts the writes told, through ts_cancel_fire, that their
// context ended: a context's end reaches the writer from a goroutine of
// its own, so a test that must know the writer has been told waits on it.
var cancelsFired atomic.Int64

// CancelsFired is how many writes have been told that their context ended,
// since the process started. For tests.
func CancelsFired() int64 { return cancelsFired.Load() }

// withCancel runs a blocking write, letting ctx give up on it before its
// group starts. A context that cannot end costs nothing.
func withCancel(ctx context.Context, call func(c *C.TsCancel) C.int32_t) C.int32_t {
	if ctx.Done() == nil {
		return call(nil)
	}
	c := C.ts_cancel_new()
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		C.ts_cancel_fire(c)
		cancelsFired.Add(1)
		close(fired)
	})
	rc := call(c)
	if !stop() {
		<-fired // the cancel is in use until its func returned
	}
	C.ts_cancel_free(c)
	return rc
}
