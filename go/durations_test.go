package tinystore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
)

func TestKV18DurationsAndRatesReadAsInEveryLanguage(t *testing.T) {
	for text, want := range map[string]time.Duration{"15m": 15 * time.Minute, "1h30m": 90 * time.Minute, "30d": 30 * 24 * time.Hour, "250ms": 250 * time.Millisecond} {
		if got, err := tinystore.ParseDuration(text); err != nil || got != want {
			t.Fatalf("ParseDuration(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, bad := range []string{"", "1hr", "30m1h", "90mins", "-1s"} {
		_, err := tinystore.ParseDuration(bad)
		var te *tinystore.Error
		if !errors.Is(err, tinystore.ErrInvalid) || !errors.As(err, &te) || !strings.Contains(te.Message, strconv.Quote(bad)) {
			t.Fatalf("ParseDuration(%q): %v, want ErrInvalid naming it", bad, err)
		}
	}
	if n, per, err := tinystore.ParseRate("300/7d"); err != nil || n != 300 || per != 7*24*time.Hour {
		t.Fatalf("ParseRate(300/7d) = %d %v %v", n, per, err)
	}
	for _, bad := range []string{"5", "5/0s", "x/m"} {
		if _, _, err := tinystore.ParseRate(bad); !errors.Is(err, tinystore.ErrInvalid) {
			t.Fatalf("ParseRate(%q): %v, want ErrInvalid", bad, err)
		}
	}
}
