package bench

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// Durable overwrites of keys that exist, in a bucket with a ttl: what a
// store of sessions writes. 100,000 keys are present; each run overwrites
// 6,400 random ones of them with new 100-byte values from 64 goroutines,
// against database/sql on SQLite upserting the same writes 64 a
// transaction by hand into a table with the same expiry column and the
// index a sweep of expired rows needs, keeping a live row's expiry as
// TinyStore does. Both are opened again before each run; the runs
// alternate (bench/src/bin/overwrites.rs is the same measure in Rust).
const (
	overwriteKeys   = 100_000
	overwriteWrites = 6_400
	overwriteTTL    = 30 * 24 * time.Hour
)

func sessionKey(n int) string { return fmt.Sprintf("session:%08d", n) }

// overwriteValue is new bytes every write: SQLite skips a page whose row is
// rewritten byte for byte.
func overwriteValue(run, n int) []byte {
	v := []byte(fmt.Sprintf("%016x%016x", run, n))
	for len(v) < valueSize {
		v = append(v, '.')
	}
	return v
}

// overwritePicks is the random keys of run r, the same for every contender.
func overwritePicks(r int) []int {
	out := make([]int, overwriteWrites)
	x := uint64(r)*0x9E3779B97F4A7C15 | 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = int(x % overwriteKeys)
	}
	return out
}

const overwriteUpsert = `INSERT INTO kv (k, v, expires) VALUES (?1, ?2, ?3) ON CONFLICT (k) DO UPDATE SET v = excluded.v,
	expires = CASE WHEN kv.expires > ?4 THEN kv.expires ELSE excluded.expires END`

func openOverwritePeer(b *testing.B, path string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL, expires INTEGER) WITHOUT ROWID`,
		`CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires) WHERE expires IS NOT NULL`,
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	checkDurable(b, db)
	return db
}

// peerUpsert writes rows, 64 a transaction; rows[i] is the key of value i.
func peerUpsert(db *sql.DB, keys []int, val func(i int) []byte) error {
	for i := 0; i < len(keys); i += writers {
		now := time.Now().UnixMilli()
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		st, err := tx.Prepare(overwriteUpsert)
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		for j := i; j < i+writers && j < len(keys); j++ {
			if _, err := st.Exec(sessionKey(keys[j]), val(j), now+overwriteTTL.Milliseconds(), now); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func BenchmarkOverwrites(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once")
	}
	dir := b.TempDir()
	peerPath := filepath.Join(b.TempDir(), "peer.db")
	all := make([]int, overwriteKeys)
	for i := range all {
		all[i] = i
	}
	{
		store, err := tinystore.Open(ctx, dir, tinystore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		bucket, err := kv.OpenBucket[[]byte](store, "sessions", kv.TTL(overwriteTTL))
		if err != nil {
			b.Fatal(err)
		}
		if err := fill(bucket, all); err != nil {
			b.Fatal(err)
		}
		_ = store.Close()
		db := openOverwritePeer(b, peerPath)
		if err := peerUpsert(db, all, func(i int) []byte { return overwriteValue(0, i) }); err != nil {
			b.Fatal(err)
		}
		_ = db.Close()
	}
	ours := func(r int) (float64, error) {
		store, err := tinystore.Open(ctx, dir, tinystore.Options{})
		if err != nil {
			return 0, err
		}
		defer store.Close()
		bucket, err := kv.OpenBucket[[]byte](store, "sessions", kv.TTL(overwriteTTL))
		if err != nil {
			return 0, err
		}
		ks := overwritePicks(r)
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ks); i += writers {
					if err := bucket.Set(ctx, sessionKey(ks[i]), overwriteValue(r, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(t0)
		close(errs)
		if err := <-errs; err != nil {
			return 0, err
		}
		return overwriteWrites / took.Seconds(), nil
	}
	peer := func(r int) (float64, error) {
		db := openOverwritePeer(b, peerPath)
		defer db.Close()
		ks := overwritePicks(r)
		t0 := time.Now()
		if err := peerUpsert(db, ks, func(i int) []byte { return overwriteValue(r, i) }); err != nil {
			return 0, err
		}
		return overwriteWrites / time.Since(t0).Seconds(), nil
	}
	var oursRates, peerRates []float64
	run := 0
	for round := range *setRounds {
		order := []func(int) (float64, error){ours, peer}
		rates := []*[]float64{&oursRates, &peerRates}
		if round%2 == 1 {
			order[0], order[1], rates[0], rates[1] = order[1], order[0], rates[1], rates[0]
		}
		for i, f := range order {
			run++
			rate, err := f(run)
			if err != nil {
				b.Fatal(err)
			}
			*rates[i] = append(*rates[i], rate)
		}
	}
	setReport = append(setReport,
		fmt.Sprintf("overwrites with a ttl, 64 goroutines: tinystore median %.0f/s, sqlite 64 upserts a transaction by hand %.0f/s, ratio %.2f",
			median(oursRates), median(peerRates), median(oursRates)/median(peerRates)))
}

// fill writes every key once, 64 goroutines at a time.
func fill(bucket *kv.Bucket[[]byte], keys []int) error {
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(keys); i += writers {
				if err := bucket.Set(ctx, sessionKey(keys[i]), overwriteValue(0, i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
