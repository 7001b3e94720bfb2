package cases

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// typ is how one value type of the cases maps onto a Go type T.
type typ[T any] struct {
	from func(v any) T              // a case's JSON as a T
	same func(want any, got T) bool // a T read back against a case's JSON
}

var (
	stringType = typ[string]{from: Text, same: func(w any, g string) bool { return Text(w) == g }}
	bytesType  = typ[[]byte]{from: Bytes, same: func(w any, g []byte) bool { return bytes.Equal(Bytes(w), g) }}
	intType    = typ[int64]{from: Int, same: func(w any, g int64) bool { return Int(w) == g }}
	uint64Type = typ[uint64]{from: Uint64, same: func(w any, g uint64) bool { return Uint64(w) == g }}
	floatType  = typ[float64]{from: Float, same: func(w any, g float64) bool {
		return math.Float64bits(Float(w)) == math.Float64bits(g)
	}}
	boolType = typ[bool]{
		from: func(v any) bool {
			b, ok := v.(bool)
			if !ok {
				panic(fmt.Sprintf("not a bool value: %#v", v))
			}
			return b
		},
		same: func(w any, g bool) bool { return w == g },
	}
	setType  = typ[struct{}]{from: func(any) struct{} { return struct{}{} }, same: func(w any, _ struct{}) bool { return w == nil }}
	jsonType = typ[json.RawMessage]{from: JSON, same: func(w any, g json.RawMessage) bool { return SameJSON(w, g) }}
)

// Value is a value read back: compared with a case's JSON by its type.
type Value interface {
	// Same says whether the value is the case's want.
	Same(want any) bool
	// String shows the value for a message.
	String() string
}

type value[T any] struct {
	v T
	t *typ[T]
}

func (x value[T]) Same(want any) bool { return x.t.same(want, x.v) }
func (x value[T]) String() string     { return Show(x.v) }

// Bucket is a kv.Bucket of a case's value type, taking and giving values as
// the cases write them.
type Bucket interface {
	// Under is the branch of owners (keys as Key gives them).
	Under(owners ...any) Bucket
	// WithTx is the bucket inside a transaction.
	WithTx(tx *kv.Tx) Bucket
	// Set writes a case's value and answers its version.
	Set(ctx context.Context, key, v any, opts ...kv.CallOption) (kv.Version, error)
	// Get reads a value.
	Get(ctx context.Context, key any) (Value, bool, error)
	// Has says whether a live key is there.
	Has(ctx context.Context, key any) (bool, error)
	// Entry reads a value with its version and expiry.
	Entry(ctx context.Context, key any) (v Value, version kv.Version, expiresAt time.Time, found bool, err error)
	// Create writes a case's value if the key is absent.
	Create(ctx context.Context, key, v any, opts ...kv.CallOption) (bool, error)
	// CreateEntry is Create, answering the key's entry too.
	CreateEntry(ctx context.Context, key, v any, opts ...kv.CallOption) (e Value, version kv.Version, expiresAt time.Time, written bool, err error)
	// Take reads and deletes a value.
	Take(ctx context.Context, key any, opts ...kv.CallOption) (Value, bool, error)
	// Delete deletes a key.
	Delete(ctx context.Context, key any, opts ...kv.CallOption) (bool, error)
	// Expire gives a live key a new expiry.
	Expire(ctx context.Context, key any, opts ...kv.CallOption) (bool, error)
	// Clear removes the branch.
	Clear(ctx context.Context) error
	// List gives a page's keys, as they are, and the cursor of the next
	// ("" on the last).
	List(ctx context.Context, opts kv.ListOptions) (keys []string, next string, err error)
	// All gives every key of the branch.
	All(ctx context.Context) ([]string, error)
}

type bucket[T any] struct {
	b *kv.Bucket[T]
	t *typ[T]
}

func (x bucket[T]) Under(owners ...any) Bucket { return bucket[T]{x.b.Under(owners...), x.t} }
func (x bucket[T]) WithTx(tx *kv.Tx) Bucket    { return bucket[T]{x.b.WithTx(tx), x.t} }

func (x bucket[T]) Set(ctx context.Context, key, v any, opts ...kv.CallOption) (kv.Version, error) {
	return x.b.SetVersion(ctx, key, x.t.from(v), opts...)
}

func (x bucket[T]) Get(ctx context.Context, key any) (Value, bool, error) {
	v, found, err := x.b.Get(ctx, key)
	return value[T]{v, x.t}, found, err
}

func (x bucket[T]) Has(ctx context.Context, key any) (bool, error) { return x.b.Has(ctx, key) }

func (x bucket[T]) Entry(ctx context.Context, key any) (Value, kv.Version, time.Time, bool, error) {
	e, found, err := x.b.Entry(ctx, key)
	return value[T]{e.Value, x.t}, e.Version, e.ExpiresAt, found, err
}

func (x bucket[T]) Create(ctx context.Context, key, v any, opts ...kv.CallOption) (bool, error) {
	return x.b.Create(ctx, key, x.t.from(v), opts...)
}

func (x bucket[T]) CreateEntry(ctx context.Context, key, v any, opts ...kv.CallOption) (Value, kv.Version, time.Time, bool, error) {
	e, written, err := x.b.CreateEntry(ctx, key, x.t.from(v), opts...)
	return value[T]{e.Value, x.t}, e.Version, e.ExpiresAt, written, err
}

func (x bucket[T]) Take(ctx context.Context, key any, opts ...kv.CallOption) (Value, bool, error) {
	v, found, err := x.b.Take(ctx, key, opts...)
	return value[T]{v, x.t}, found, err
}

func (x bucket[T]) Delete(ctx context.Context, key any, opts ...kv.CallOption) (bool, error) {
	return x.b.Delete(ctx, key, opts...)
}

func (x bucket[T]) Expire(ctx context.Context, key any, opts ...kv.CallOption) (bool, error) {
	return x.b.Expire(ctx, key, opts...)
}

func (x bucket[T]) Clear(ctx context.Context) error { return x.b.Clear(ctx) }

func (x bucket[T]) List(ctx context.Context, opts kv.ListOptions) ([]string, string, error) {
	page, err := x.b.List(ctx, opts)
	keys := make([]string, len(page.Entries))
	for i, e := range page.Entries {
		keys[i] = e.Key
	}
	return keys, page.Next, err
}

func (x bucket[T]) All(ctx context.Context) ([]string, error) {
	var keys []string
	for e, err := range x.b.All(ctx) {
		if err != nil {
			return nil, err
		}
		keys = append(keys, e.Key)
	}
	return keys, nil
}

func (t *typ[T]) openBucket(store *tinystore.Store, name string, opts []kv.BucketOption) (Bucket, error) {
	b, err := kv.OpenBucket[T](store, name, opts...)
	if err != nil {
		return nil, err
	}
	return bucket[T]{b, t}, nil
}

// caseType is a case's value type, which opens the handles of its Go type.
type caseType interface {
	openBucket(store *tinystore.Store, name string, opts []kv.BucketOption) (Bucket, error)
	openOnce(store *tinystore.Store, name string, opts []kv.OnceOption) (Once, error)
}

// caseTypes are the value types of the cases, by name.
var caseTypes = map[string]caseType{
	"string": &stringType, "bytes": &bytesType, "int": &intType, "uint64": &uint64Type,
	"float": &floatType, "bool": &boolType, "set": &setType, "json": &jsonType,
}

// typeNamed is the case type typeName, or an error naming it.
func typeNamed(typeName string) (caseType, error) {
	if t, ok := caseTypes[typeName]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("the Go cases do not know the value type %q", typeName)
}

// OpenBucket opens the bucket name of a case's type: string, bytes, int
// (int64), uint64, float (float64), bool, set (struct{}) or json
// (json.RawMessage). An unknown type is an error.
func OpenBucket(store *tinystore.Store, typeName, name string, opts ...kv.BucketOption) (Bucket, error) {
	t, err := typeNamed(typeName)
	if err != nil {
		return nil, err
	}
	return t.openBucket(store, name, opts)
}

// Once is a kv.Once of a case's value type.
type Once interface {
	// Under is the branch of owners.
	Under(owners ...any) Once
	// Run runs key: fn answers a case's JSON value, or an error.
	Run(ctx context.Context, key any, fn func(ctx context.Context) (any, error)) (Value, error)
	// Get reads the answer kept for key.
	Get(ctx context.Context, key any) (Value, bool, error)
	// Delete forgets the answer kept for key.
	Delete(ctx context.Context, key any) (bool, error)
	// WithTx is the once's answers inside a transaction.
	WithTx(tx *kv.Tx) Once
}

type once[T any] struct {
	o *kv.Once[T]
	t *typ[T]
}

func (x once[T]) Under(owners ...any) Once { return once[T]{x.o.Under(owners...), x.t} }
func (x once[T]) WithTx(tx *kv.Tx) Once    { return once[T]{x.o.WithTx(tx), x.t} }

func (x once[T]) Run(ctx context.Context, key any, fn func(ctx context.Context) (any, error)) (Value, error) {
	v, err := x.o.Run(ctx, key, func(ctx context.Context) (T, error) {
		answer, err := fn(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		return x.t.from(answer), nil
	})
	return value[T]{v, x.t}, err
}

func (x once[T]) Get(ctx context.Context, key any) (Value, bool, error) {
	v, found, err := x.o.Get(ctx, key)
	return value[T]{v, x.t}, found, err
}

func (x once[T]) Delete(ctx context.Context, key any) (bool, error) { return x.o.Delete(ctx, key) }

func (t *typ[T]) openOnce(store *tinystore.Store, name string, opts []kv.OnceOption) (Once, error) {
	o, err := kv.OpenOnce[T](store, name, opts...)
	if err != nil {
		return nil, err
	}
	return once[T]{o, t}, nil
}

// OpenOnce opens the once name of a case's type, as OpenBucket does.
func OpenOnce(store *tinystore.Store, typeName, name string, opts ...kv.OnceOption) (Once, error) {
	t, err := typeNamed(typeName)
	if err != nil {
		return nil, err
	}
	return t.openOnce(store, name, opts)
}
