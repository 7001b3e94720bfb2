package bench

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

var (
	setRounds = flag.Int("rounds", 5, "rounds of the durable-set comparison")
	setRound  = flag.Duration("round", time.Second, "how long each contender runs in a round")
)

// run numbers the runs of every contender: each run writes keys no earlier
// run wrote. SQLite writes nothing, and syncs nothing, for a row rewritten
// with the bytes it already holds, so a contender rewriting the keys of its
// previous round would be timed without its fsync.
var run atomic.Int64

// setKey is the nth key of run r. Every contender writes one sequence of
// keys, its goroutines drawing the next number from one counter: a group of
// writes then lands on the same few b-tree pages as the hand-batched
// peer's. (Keys of 64 goroutines counting apart land on 64 pages per
// commit.)
func setKey(buf []byte, r, n int64) string {
	buf = append(buf[:0], 'r')
	buf = strconv.AppendInt(buf, r, 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, n, 10)
	return string(buf)
}

// inFlight runs op from g goroutines for d; each call gets the next number
// of one shared sequence. It answers the ops done and the time they took.
func inFlight(g int, d time.Duration, op func(buf []byte, n int64) error) (int64, time.Duration, error) {
	var next, total atomic.Int64
	var stop atomic.Bool
	var first error
	var once sync.Once
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for range g {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			buf := make([]byte, 0, 32)
			ready.Done()
			<-start
			var n int64
			for !stop.Load() {
				if err := op(buf, next.Add(1)-1); err != nil {
					once.Do(func() { first = err })
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	done.Wait()
	return total.Load(), time.Since(t0), first
}

// contender is one way of making durable sets, timed for a round.
type contender struct {
	name  string
	round func(d time.Duration) (int64, time.Duration, error)
	rates []float64 // ops/s, one per round
	// perGroup is TinyStore's writes per group of the writer, one per
	// round: how many sets shared each commit and its fsync.
	perGroup []float64
}

func (c *contender) median() float64 { return median(c.rates) }

// median is the middle of xs (the mean of the middle two), 0 for none.
func median(xs []float64) float64 {
	r := append([]float64(nil), xs...)
	sort.Float64s(r)
	if len(r) == 0 {
		return 0
	}
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

// setReport is what BenchmarkSet found, printed by TestMain after the
// benchmarks' own lines.
var setReport []string

// BenchmarkSet compares durable sets (WAL, synchronous=FULL, 100-byte
// values, new keys every run) of TinyStore and database/sql on SQLite. The
// contenders take turns, round after round, and the medians are compared:
// run one after the other, a contender would be timed on a machine in
// another mood than its peer. It runs once, whatever b.N.
func BenchmarkSet(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once")
	}
	dir := b.TempDir()
	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	bucket, err := kv.OpenBucket[[]byte](store, "bench")
	if err != nil {
		b.Fatal(err)
	}
	db, _ := openSQLite(b, false)
	const upsert = `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	// The hand-batched peer keeps one connection and one prepared statement.
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	checkDurable(b, conn)
	batchSet, err := conn.PrepareContext(ctx, upsert)
	if err != nil {
		b.Fatal(err)
	}
	oneSet, err := db.Prepare(upsert)
	if err != nil {
		b.Fatal(err)
	}
	// ours also keeps the round's writes per group in its contender.
	ours := func(g int, c *contender) func(time.Duration) (int64, time.Duration, error) {
		return func(d time.Duration) (int64, time.Duration, error) {
			r := run.Add(1)
			before, err := store.GroupStats()
			if err != nil {
				return 0, 0, err
			}
			n, el, err := inFlight(g, d, func(buf []byte, n int64) error {
				return bucket.Set(ctx, setKey(buf, r, n), value)
			})
			if after, serr := store.GroupStats(); err == nil && serr == nil {
				c.perGroup = append(c.perGroup, after.Sub(before).WritesPerGroup())
			}
			return n, el, err
		}
	}
	batched := func(d time.Duration) (int64, time.Duration, error) {
		r := run.Add(1)
		buf := make([]byte, 0, 32)
		t0 := time.Now()
		var n int64
		for time.Since(t0) < d {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return n, time.Since(t0), err
			}
			st := tx.StmtContext(ctx, batchSet)
			for range writers {
				if _, err := st.Exec(setKey(buf, r, n), value); err != nil {
					_ = tx.Rollback()
					return n, time.Since(t0), err
				}
				n++
			}
			if err := tx.Commit(); err != nil {
				return n, time.Since(t0), err
			}
		}
		return n, time.Since(t0), nil
	}
	onePerTx := func(d time.Duration) (int64, time.Duration, error) {
		r := run.Add(1)
		return inFlight(1, d, func(buf []byte, n int64) error {
			_, err := oneSet.Exec(setKey(buf, r, n), value)
			return err
		})
	}
	ours64 := &contender{name: "tinystore set, 64 goroutines"}
	ours64.round = ours(writers, ours64)
	ours1 := &contender{name: "tinystore set, 1 goroutine"}
	ours1.round = ours(1, ours1)
	cs := []*contender{
		ours64,
		{name: "sqlite, 64 sets batched by hand per transaction", round: batched},
		ours1,
		{name: "sqlite, one transaction per set", round: onePerTx},
	}
	// Each round starts one contender later, so that none always runs first
	// or right after the same other one (whose WAL and dirty pages it inherits).
	for r := range *setRounds {
		for k := range cs {
			c := cs[(k+r)%len(cs)]
			n, el, err := c.round(*setRound)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			c.rates = append(c.rates, float64(n)/el.Seconds())
		}
	}
	out := []string{fmt.Sprintf("durable sets, 100-byte values, WAL + synchronous=FULL, new keys every run; %d rounds of %v, medians",
		*setRounds, *setRound)}
	for _, c := range cs {
		line := fmt.Sprintf("  %-58s %10.0f ops/s", c.name, c.median())
		if len(c.perGroup) > 0 {
			line += fmt.Sprintf("  %5.1f writes/group", median(c.perGroup))
		}
		out = append(out, line)
	}
	ratio := cs[0].median() / cs[1].median()
	out = append(out,
		fmt.Sprintf("  %-58s %5.2f  (target >= 0.80)", "set throughput, 64 goroutines: tinystore / sqlite batched 64", ratio),
		fmt.Sprintf("  %-58s %5.2f  (target none)", "set throughput, 1 goroutine: tinystore / sqlite autocommit", cs[2].median()/cs[3].median()))
	setReport = out
	b.ReportMetric(ratio, "of-batched")
}

// checkDurable fails unless the peer's connection runs WAL with
// synchronous=FULL, as TinyStore does: a peer that syncs less is not a peer.
func checkDurable(b *testing.B, db interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}) {
	b.Helper()
	var mode string
	var sync int
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		b.Fatal(err)
	}
	if mode != "wal" || sync != 2 {
		b.Fatalf("the SQLite peer runs journal_mode=%s synchronous=%d, not wal and 2 (FULL)", mode, sync)
	}
}
