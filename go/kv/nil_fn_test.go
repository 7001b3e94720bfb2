package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// TestKV18NilFunctionsAreInvalid: a nil function given to Tx, View or
// Once.Run is ErrInvalid naming what needed it, not a nil dereference.
func TestKV18NilFunctionsAreInvalid(t *testing.T) {
	ctx := context.Background()
	s, _ := openManual(t)
	once := must[*kv.Once[int]](t)(kv.OpenOnce[int](s, "sends"))
	for what, err := range map[string]error{
		"a transaction": s.Tx(ctx, nil),
		"a view":        s.View(ctx, nil),
		"a run": func() error {
			_, err := once.Run(ctx, "k", nil)
			return err
		}(),
	} {
		if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), what+" needs a function to call, not nil") {
			t.Errorf("%s with a nil function: %v", what, err)
		}
	}
	// Nothing was run or kept: the key is still free.
	if _, found, err := once.Get(ctx, "k"); err != nil || found {
		t.Fatalf("a nil Run kept an answer: found %v, %v", found, err)
	}
}
