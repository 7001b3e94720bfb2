package tinystore

import (
	"context"
	"errors"
	"testing"

	"tinyshed.org/tinystore/internal/native"
)

func TestKV18EveryErrorCodeOfTheABIHasItsSentinel(t *testing.T) {
	want := map[int]error{
		native.CodeInvalid: ErrInvalid, native.CodeLimit: ErrLimit, native.CodeConflict: ErrConflict,
		native.CodeCorrupt: ErrCorrupt, native.CodeClosed: ErrClosed, native.CodeOutcomeUnknown: ErrOutcomeUnknown,
		native.CodeIO: ErrIO, native.CodeCancelled: ErrCancelled,
	}
	seen := map[error]bool{}
	for code, sentinel := range want {
		err := native.Made(code, "m", "b")
		if !errors.Is(err, sentinel) {
			t.Fatalf("code %d is %v, want %v", code, err, sentinel)
		}
		if seen[sentinel] {
			t.Fatalf("two codes map to %v", sentinel)
		}
		seen[sentinel] = true
	}
	cancelled := native.NewError(native.CodeCancelled, "m", "", "m", context.Canceled)
	if !errors.Is(cancelled, ErrCancelled) || !errors.Is(cancelled, context.Canceled) {
		t.Fatalf("a cancellation %v does not carry both kinds", cancelled)
	}
	if got := native.Made(native.CodeConflict, "the key moved", "codes").Error(); got != "tinystore: conflict: the key moved (bucket codes)" {
		t.Fatalf("the error reads %q", got)
	}
}
