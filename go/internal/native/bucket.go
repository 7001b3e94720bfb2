package native

/*
#include "tinystore.h"
extern int32_t tsGoCheck(uint64_t ctx, TsValue *value);

// A take with a check calls tsGoCheck: it goes through this wrapper, which
// is not marked nocallback, and its arguments live on the heap (a callback
// may move the goroutine's stack under a pointer C holds).
static inline int32_t ts_call_back(const TsHandle *h, const TsScope *scope, const uint8_t *owners,
    size_t owners_len, const uint8_t *key, size_t key_len, const TsCall *call, TsResult *out, TsError **err) {
  return ts_call(h, scope, owners, owners_len, key, key_len, NULL, 0, call, out, NULL, err);
}

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

// MaxPage is the most keys one page of List holds (TS_MAX_PAGE).
const MaxPage = int(C.TS_MAX_PAGE)

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
	KindCodec   Kind = C.TS_KIND_CODEC
)

// ParseVersion reads a version's text by the core's rule: what a version
// wrote, and nothing else, is one.
func ParseVersion(s string) (int64, error) {
	p, n := text(s)
	var v C.int64_t
	var e *C.TsError
	return int64(v), failure(C.ts_version_parse(p, n, &v, &e), e, nil)
}

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
// works until the store is closed.
type Bucket struct{ *handle }

// OpenBucket opens the bucket name of s.
func OpenBucket(s *Store, name string, ttl time.Duration, hasTTL bool, idle time.Duration, hasIdle bool) (*Bucket, error) {
	how := C.TsOpen{kind: C.TS_OPEN_BUCKET, has_ttl: C.bool(hasTTL), ttl_ns: C.int64_t(ttl), has_idle: C.bool(hasIdle), idle_ns: C.int64_t(idle)}
	return openedAs(s, name, how, nil, func(h *handle) *Bucket { return &Bucket{h} })
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

// run makes the call c of op about key in scope s, with the bytes of a
// value; writes says whether it writes (on the store, a write gets a cancel
// that ctx fires).
func (b *Bucket) run(ctx context.Context, s *Scope, op C.int32_t, owners []byte, key string, value []byte, c *C.TsCall) (out C.TsResult, err error) {
	c.op = op
	writes := op != C.TS_OP_GET && op != C.TS_OP_HAS && op != C.TS_OP_LIST
	err = b.handle.run(ctx, s, writes, owners, key, value, c, &out, nil)
	return out, err
}

// takeChecked is run for a take whose check calls back into Go: through
// the wrapper not marked nocallback, with c and the answer on the heap.
func (b *Bucket) takeChecked(ctx context.Context, s *Scope, owners []byte, key string, c *C.TsCall) (out C.TsResult, err error) {
	c.op = C.TS_OP_TAKE
	err = b.onKey(ctx, s, true, owners, key, nil, c, func(a at) C.int32_t {
		return C.ts_call_back(b.ptr, a.sc, a.o, a.ol, a.k, a.kl, c, &out, a.e)
	})
	return out, err
}

// Get reads a live key as want in scope s (nil: the store itself, where
// an idle bucket's key is renewed).
func (b *Bucket) Get(ctx context.Context, s *Scope, owners []byte, key string, want Kind) (Entry, bool, error) {
	return foundEntry(b.run(ctx, s, C.TS_OP_GET, owners, key, nil, &C.TsCall{want: C.int32_t(want)}))
}

// foundEntry is the entry of a read that found one, converted and freed.
func foundEntry(out C.TsResult, err error) (Entry, bool, error) {
	if err != nil || !bool(out.found) {
		return Entry{}, false, err
	}
	return entry(&out.entry), true, nil
}

// Has says whether a live key is there in scope s.
func (b *Bucket) Has(ctx context.Context, s *Scope, owners []byte, key string) (bool, error) {
	out, err := b.run(ctx, s, C.TS_OP_HAS, owners, key, nil, &C.TsCall{})
	return bool(out.found), err
}

// setsInFlight counts the Sets of the process between their start and
// their answer.
var setsInFlight atomic.Int64

// SetsInFlight is how many Sets have started and not yet been answered.
// For tests that must know their Sets are waiting on the writer.
func SetsInFlight() int64 { return setsInFlight.Load() }

// valueCall is the call of a write of v with opts.
func valueCall(v Value, opts WriteOptions) C.TsCall {
	return C.TsCall{kind: C.int32_t(v.Kind), integer: C.int64_t(v.Int), options: opts.c()}
}

// Set writes a value in scope s and returns its version. On the store
// alone, it waits for its answer in cgo, woken by the writer itself. With
// other Sets in flight, it submits the write and waits on a channel (see
// answers.go), not in a thread parked in cgo: the writer then wakes one
// thread for the group. (Alone, the channel would cost a second wake-up:
// the writer wakes the drainer, which wakes this goroutine.)
func (b *Bucket) Set(ctx context.Context, s *Scope, owners []byte, key string, v Value, opts WriteOptions) (int64, error) {
	c := valueCall(v, opts)
	if s != nil {
		return b.setBlocking(ctx, s, owners, key, v, &c)
	}
	if err := b.begin(ctx); err != nil {
		return 0, err
	}
	defer setsInFlight.Add(-1)
	if setsInFlight.Add(1) == 1 {
		return b.setBlocking(ctx, nil, owners, key, v, &c)
	}
	o, ol := bytes(owners)
	k, kl := text(key)
	vb, vl := bytes(v.Bytes)
	q := answerQueue()
	sl := takeSlot()
	defer putSlot(sl)
	done := ctx.Done()
	if done != nil {
		c.cancel = C.ts_cancel_new()
		defer C.ts_cancel_free(c.cancel) // after the answer: the write may fire it till then
	}
	var out C.TsResult
	var e *C.TsError
	c.op, c.answers, c.token = C.TS_OP_SUBMIT, q, C.uint64_t(sl.token)
	rc := C.ts_call(b.ptr, nil, o, ol, k, kl, vb, vl, &c, &out, nil, &e)
	runtime.KeepAlive(v.Bytes) // copied by the submit
	if rc != C.TS_OK || bool(out.found) {
		runtime.KeepAlive(b)
		return int64(out.number), failure(rc, e, ctx)
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
			C.ts_cancel_fire(c.cancel)
			cancelsFired.Add(1)
			r = <-sl.ch
		}
	}
	runtime.KeepAlive(b)
	return r.version, failure(r.code, r.err, ctx)
}

// setBlocking is Set waiting for its answer in cgo.
func (b *Bucket) setBlocking(ctx context.Context, s *Scope, owners []byte, key string, v Value, c *C.TsCall) (int64, error) {
	out, err := b.run(ctx, s, C.TS_OP_SET, owners, key, v.Bytes, c)
	return int64(out.number), err
}

// Create writes a value in scope s only if the key is absent: written says
// whether it did. e is the key's entry either way: the one written (its
// version and expiry; its Value is the zero Value, v being the caller's),
// or the live one found, read as want.
func (b *Bucket) Create(ctx context.Context, s *Scope, owners []byte, key string, v Value, opts WriteOptions, want Kind) (written bool, e Entry, err error) {
	c := valueCall(v, opts)
	c.want = C.int32_t(want)
	out, err := b.run(ctx, s, C.TS_OP_CREATE, owners, key, v.Bytes, &c)
	if err != nil {
		return false, Entry{}, err
	}
	return bool(out.found), entry(&out.entry), nil
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
	c := C.TsCall{options: opts.c(), want: C.int32_t(want)}
	if check == nil {
		return foundEntry(b.run(ctx, s, C.TS_OP_TAKE, owners, key, nil, &c))
	}
	h := cgo.NewHandle(checkFunc(check))
	defer h.Delete()
	c.check, c.check_ctx = C.TsCheckFn(C.tsGoCheck), C.uint64_t(h)
	return foundEntry(b.takeChecked(ctx, s, owners, key, &c))
}

// Delete deletes a key in scope s and says whether a live key was there.
func (b *Bucket) Delete(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions) (bool, error) {
	out, err := b.run(ctx, s, C.TS_OP_DELETE, owners, key, nil, &C.TsCall{options: opts.c()})
	return bool(out.found), err
}

// Expire gives a live key the options' expiry in scope s and says whether
// it was there.
func (b *Bucket) Expire(ctx context.Context, s *Scope, owners []byte, key string, opts WriteOptions) (bool, error) {
	out, err := b.run(ctx, s, C.TS_OP_EXPIRE, owners, key, nil, &C.TsCall{options: opts.c()})
	return bool(out.found), err
}

// Clear removes the branch of owners and every branch under it, in scope s.
func (b *Bucket) Clear(ctx context.Context, s *Scope, owners []byte) error {
	_, err := b.run(ctx, s, C.TS_OP_CLEAR, owners, "", nil, &C.TsCall{})
	return err
}

// List reads a page of the branch's own keys in scope s, after `after`
// (when hasAfter), at most limit (0 for the default); next is the cursor
// of the next page.
func (b *Bucket) List(ctx context.Context, s *Scope, owners []byte, after string, hasAfter bool, limit int, want Kind) (entries []Entry, next string, more bool, err error) {
	c := C.TsCall{has_after: C.bool(hasAfter), limit: C.int64_t(limit), want: C.int32_t(want)}
	out, err := b.run(ctx, s, C.TS_OP_LIST, owners, after, nil, &c)
	if err != nil {
		return nil, "", false, err
	}
	entries, next, more = readPage(out.page)
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
	rc := C.ts_error_new(n, nl, o, ol, k, kl, C.int32_t(code), m, ml, &e)
	return failure(rc, e, nil)
}
