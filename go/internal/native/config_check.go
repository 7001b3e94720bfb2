package native

/*
#include "tinystore.h"
*/
import "C"

import "runtime/cgo"

// The callbacks of a config's check (see OpenConfig). They live in a file
// of their own because a file that exports to C may only declare in its
// preamble.

//export tsGoConfigCheck
func tsGoConfigCheck(ctx C.uintptr_t, json *C.uint8_t, n C.size_t, why *C.TsWhy) C.bool {
	check := cgo.Handle(ctx).Value().(func([]byte) error)
	err := check(goBytes(json, n))
	if err == nil {
		return true
	}
	w, wl := text(err.Error())
	C.ts_why_set(why, w, wl)
	return false
}

//export tsGoConfigRelease
func tsGoConfigRelease(ctx C.uintptr_t) {
	cgo.Handle(ctx).Delete()
}
