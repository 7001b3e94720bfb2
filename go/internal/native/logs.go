package native

/*
#include "tinystore.h"
*/
import "C"

// logWaitMillis is how long one wait for a record lasts in cgo; the
// goroutine then waits again.
const logWaitMillis = 3_600_000

// ForwardLogs hands each record of the engine's log to emit, on a
// goroutine of its own, from now on; level is 1 for an error, 2 for a
// warning, 3 for information, and store the LogID of the store the record
// is about, or 0. It returns false when another logger of the process took
// the records first. Call it once.
func ForwardLogs(emit func(level int, store uint64, target, message string)) bool {
	if !bool(C.ts_logs_forward()) {
		return false
	}
	go func() {
		for {
			var r C.TsLogRecord
			if C.ts_logs_next(logWaitMillis, &r) == 0 {
				continue
			}
			target := goBytes(r.target, r.target_len)
			message := goBytes(r.message, r.message_len)
			C.ts_bytes_free(r.target, r.target_len)
			C.ts_bytes_free(r.message, r.message_len)
			emit(int(r.level), uint64(r.store), string(target), string(message))
		}
	}()
	return true
}
