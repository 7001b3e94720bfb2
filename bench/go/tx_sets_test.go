package bench

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// txSets is how many sets of fresh keys one transaction writes.
const txSets = 6_400

// txReport is what BenchmarkTxSets found, printed by TestMain.
var txReport []string

// BenchmarkTxSets compares 6,400 sets of fresh keys (100-byte values) in
// one store.Tx against the same inserts in one database/sql transaction
// on SQLite (WAL, synchronous=FULL). The two take turns, round after
// round; each figure is the median µs a set, the commit included, and the
// ratio is TinyStore's time over the peer's. It runs once, whatever b.N.
func BenchmarkTxSets(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once")
	}
	store, err := tinystore.Open(ctx, b.TempDir(), tinystore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	bucket, err := kv.OpenBucket[[]byte](store, "bench")
	if err != nil {
		b.Fatal(err)
	}
	db, _ := openSQLite(b, false)
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	insert, err := conn.PrepareContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	keys := func() []string {
		r := run.Add(1)
		ks := make([]string, txSets)
		for i := range ks {
			ks[i] = "t" + strconv.FormatInt(r, 10) + "-" + strconv.Itoa(i)
		}
		return ks
	}
	ours := func() error {
		ks := keys()
		return store.Tx(ctx, func(tx *kv.Tx) error {
			in := bucket.WithTx(tx)
			for _, k := range ks {
				if err := in.Set(ctx, k, value); err != nil {
					return err
				}
			}
			return nil
		})
	}
	peer := func() error {
		ks := keys()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		st := tx.StmtContext(ctx, insert)
		for _, k := range ks {
			if _, err := st.Exec(k, value); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	names := []string{"tinystore store.Tx", "database/sql (modernc sqlite), one transaction"}
	runs := []func() error{ours, peer}
	times := [][]float64{nil, nil}
	for r := range *setRounds {
		for k := range runs {
			i := (k + r) % len(runs)
			t0 := time.Now()
			if err := runs[i](); err != nil {
				b.Fatalf("%s: %v", names[i], err)
			}
			times[i] = append(times[i], float64(time.Since(t0).Microseconds())/txSets)
		}
	}
	paired := make([]float64, len(times[0]))
	for r := range paired {
		paired[r] = times[0][r] / times[1][r]
	}
	txReport = []string{fmt.Sprintf("%d sets of fresh keys in one transaction, 100-byte values, WAL + synchronous=FULL; %d rounds, medians",
		txSets, len(times[0]))}
	for i, n := range names {
		txReport = append(txReport, fmt.Sprintf("  %-58s %8.2f µs a set", n, median(times[i])))
	}
	txReport = append(txReport, fmt.Sprintf("  %-58s %5.2f (%.2f)", "tx set / database/sql set (time): paired (of medians)",
		median(paired), median(times[0])/median(times[1])))
	b.ReportMetric(median(times[0]), "us/set")
}
