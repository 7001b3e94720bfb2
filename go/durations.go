package tinystore

import (
	"math"
	"time"

	"tinyshed.org/tinystore/internal/native"
)

// ParseDuration reads a duration written as every language of TinyStore
// writes one, units from largest to smallest, each once: "15m", "30d",
// "1h30m", "250ms" (units w d h m s ms). Bad text is ErrInvalid naming it.
// For durations read from configuration, so that they mean the same in Go
// as in the other languages; time.ParseDuration reads no days and accepts
// units in any order.
func ParseDuration(s string) (time.Duration, error) { return native.ParseDuration(s) }

// ParseRate reads a rate such as "5/m", "100/5h" or "300/7d" into a count
// and the span it is counted over, for kv.Rate and kv.Window. Bad text is
// ErrInvalid naming it.
func ParseRate(s string) (n int, per time.Duration, err error) {
	count, per, err := native.ParseRate(s)
	if err != nil {
		return 0, 0, err
	}
	if count > math.MaxInt {
		return 0, 0, &Error{Kind: ErrInvalid, Message: "the count of rate " + s + " does not fit an int"}
	}
	return int(count), per, nil
}
