// Benchmarks of the Go API of TinyStore against database/sql on SQLite
// (modernc.org/sqlite, pure Go: a cgo driver would clash with the sqlite3
// symbols of libtinystore.a in one binary). Run with `make bench-go`.
//
// The targets (docs/measurements.md): a Get within 2x of a plain prepared point
// read; durable Sets from 64 goroutines at least 80% of the throughput of
// the same sets batched by hand, 64 per transaction, with synchronous=FULL.
// TestMain prints the ratios after the benchmarks. BenchmarkSet (set_test.go)
// and BenchmarkTxSets (tx_sets_test.go) time their contenders in turns over
// rounds and compare medians; `-args -rounds 5 -round 1s` sets how many and
// how long.
package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

const (
	keys      = 100_000 // gets over 100,000 keys, as in every language's bench
	valueSize = 100
	writers   = 64
)

var (
	ctx   = context.Background()
	value = make([]byte, valueSize)
	// nsPerOp holds each benchmark's last (longest) run, for the ratios.
	nsPerOp sync.Map
)

func record(b *testing.B) {
	nsPerOp.Store(b.Name(), float64(b.Elapsed().Nanoseconds())/float64(b.N))
}

func key(i int) string { return fmt.Sprintf("key-%06d", i) }

// --- TinyStore ---

func openBucket(b *testing.B, fill bool) *kv.Bucket[[]byte] {
	b.Helper()
	store, err := tinystore.Open(ctx, b.TempDir(), tinystore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	bucket, err := kv.OpenBucket[[]byte](store, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if fill {
		parallel(b, keys, func(i int) error { return bucket.Set(ctx, key(i), value) })
	}
	return bucket
}

// parallel runs f(0..n-1) from `writers` goroutines.
func parallel(b *testing.B, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkGet(b *testing.B) {
	b.Run("tinystore/1", func(b *testing.B) {
		bucket := openBucket(b, true)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, found, err := bucket.Get(ctx, key(i%keys)); err != nil || !found {
				b.Fatal(found, err)
			}
		}
		record(b)
	})
	b.Run("tinystore/64", func(b *testing.B) {
		bucket := openBucket(b, true)
		b.SetParallelism(writers)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, found, err := bucket.Get(ctx, key(rand.IntN(keys))); err != nil || !found {
					b.Error(found, err)
					return
				}
			}
		})
		record(b)
	})
	b.Run("sqlite/1", func(b *testing.B) {
		db, get := openSQLite(b, true)
		_ = db
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var v []byte
			if err := get.QueryRow(key(i % keys)).Scan(&v); err != nil {
				b.Fatal(err)
			}
		}
		record(b)
	})
	b.Run("sqlite/64", func(b *testing.B) {
		_, get := openSQLite(b, true)
		b.SetParallelism(writers)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				var v []byte
				if err := get.QueryRow(key(rand.IntN(keys))).Scan(&v); err != nil {
					b.Error(err)
					return
				}
			}
		})
		record(b)
	})
}

// openSQLite opens the peer: one table keyed like TinyStore's (WITHOUT
// ROWID: one b-tree), WAL, synchronous=FULL (checked), and a prepared
// point read.
func openSQLite(b *testing.B, fill bool) (*sql.DB, *sql.Stmt) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "peer.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(writers)
	db.SetMaxIdleConns(writers)
	b.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	checkDurable(b, db)
	if fill {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := range keys {
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, key(i), value); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	get, err := db.Prepare(`SELECT v FROM kv WHERE k = ?`)
	if err != nil {
		b.Fatal(err)
	}
	return db, get
}

// TestMain prints the ratios the targets are stated in, after the benchmarks.
func TestMain(m *testing.M) {
	code := m.Run()
	got := map[string]float64{}
	nsPerOp.Range(func(k, v any) bool {
		got[k.(string)] = v.(float64)
		return true
	})
	if len(got) > 0 {
		names := make([]string, 0, len(got))
		for n := range got {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Println("\nper operation:")
		for _, n := range names {
			fmt.Printf("  %-38s %10.0f ns  (%8.0f ops/s)\n", n, got[n], 1e9/got[n])
		}
		ratio := func(what, a, b string, target string) {
			if got[a] > 0 && got[b] > 0 {
				fmt.Printf("  %-58s %5.2f  (target %s)\n", what, got[a]/got[b], target)
			}
		}
		fmt.Println("ratios:")
		ratio("get, 1 goroutine: tinystore / sqlite prepared read", "BenchmarkGet/tinystore/1", "BenchmarkGet/sqlite/1", "<= 2")
		ratio("get, 64 goroutines: tinystore / sqlite prepared read", "BenchmarkGet/tinystore/64", "BenchmarkGet/sqlite/64", "<= 2")
	}
	for _, report := range [][]string{setReport, txReport} {
		if len(report) > 0 {
			fmt.Println()
			for _, l := range report {
				fmt.Println(l)
			}
		}
	}
	os.Exit(code)
}
