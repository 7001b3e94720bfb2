package tinystore_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// openTemp opens a store with opts in a new directory; the caller closes it.
func openTemp(t *testing.T, opts tinystore.Options) *tinystore.Store {
	t.Helper()
	store, err := tinystore.Open(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// recordsTo is a slog handler that sends each record to a channel.
type recordsTo chan slog.Record

func (h recordsTo) Enabled(context.Context, slog.Level) bool { return true }
func (h recordsTo) Handle(_ context.Context, r slog.Record) error {
	select {
	case h <- r:
	default:
	}
	return nil
}
func (h recordsTo) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordsTo) WithGroup(string) slog.Handler      { return h }

type withRPS struct {
	Port int `json:"port"`
	RPS  int `json:"rps"`
}

type withoutRPS struct {
	Port int `json:"port"`
}

func TestAnEngineWarningReachesTheDefaultSlogLogger(t *testing.T) {
	records := make(recordsTo, 64)
	before := slog.Default()
	slog.SetDefault(slog.New(records))
	defer slog.SetDefault(before)

	store := openTemp(t, tinystore.Options{})
	defer store.Close()
	leaveOutRPS(t, store)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-records:
			if !strings.Contains(r.Message, `"rps" is no longer in the program`) {
				continue
			}
			if r.Level != slog.LevelWarn || !strings.HasPrefix(r.Message, "tinystore: ") {
				t.Fatalf("record %v %q", r.Level, r.Message)
			}
			var target string
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "target" {
					target = a.Value.String()
				}
				return true
			})
			if target != "tinystore::config" {
				t.Fatalf("target %q", target)
			}
			return
		case <-deadline:
			t.Fatal("no warning of the field left out within 10 s")
		}
	}
}

// leaveOutRPS makes the engine warn about store: a field is kept, then
// opened by a program that no longer has it.
func leaveOutRPS(t *testing.T, store *tinystore.Store) {
	t.Helper()
	ctx := context.Background()
	c, err := kv.OpenConfig[withRPS](store, "app", kv.Defaults(withRPS{Port: 8080, RPS: 100}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, func(s *withRPS) { s.RPS = 200 }); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.OpenConfig[withoutRPS](store, "app"); err != nil {
		t.Fatal(err)
	}
}

// leftOutIn waits for the warning about rps in records, and says whether it
// came within 10 s.
func leftOutIn(records recordsTo, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case r := <-records:
			if strings.Contains(r.Message, `"rps" is no longer in the program`) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func TestAStoresRecordsReachItsOptionsLogger(t *testing.T) {
	fallback := make(recordsTo, 64)
	before := slog.Default()
	slog.SetDefault(slog.New(fallback))
	defer slog.SetDefault(before)

	own := make(recordsTo, 64)
	logged := openTemp(t, tinystore.Options{Logger: slog.New(own)})
	defer logged.Close()
	leaveOutRPS(t, logged)
	if !leftOutIn(own, 10*time.Second) {
		t.Fatal("the store's warning did not reach its Options.Logger within 10 s")
	}
	// The other store's warning, which comes after, went to the default
	// logger: when it is there, this store's would have been too.
	plain := openTemp(t, tinystore.Options{})
	defer plain.Close()
	leaveOutRPS(t, plain)
	if !leftOutIn(fallback, 10*time.Second) {
		t.Fatal("a store without a Logger did not warn through slog.Default() within 10 s")
	}
	select {
	case r := <-fallback:
		t.Fatalf("the default logger got another record: %q", r.Message)
	default:
	}
	select {
	case r := <-own:
		t.Fatalf("the store's logger got another store's record: %q", r.Message)
	default:
	}
}
