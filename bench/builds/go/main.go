// Command builds is one build's side of a before/after comparison
// (bench/builds/compare.py): the Go workloads of `make bench` that a change
// to the C ABI can slow, against the Go package of the tree it is built in,
// printed as one JSON line of ops per second.
//
// The workloads are bench/go's: Get of an existing key among 100,000 (1 in
// flight), durable Sets from 64 goroutines, and Allow on one hot key (as
// the other languages' peers benches). Each runs -reps slices of -slice,
// interleaved; the median is kept.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

const (
	keys    = 100_000
	writers = 64
)

var (
	ctx   = context.Background()
	value = make([]byte, 100)
)

func key(i int) string { return fmt.Sprintf("key-%06d", i) }

// inFlight calls f from g goroutines until d is up; ops per second.
func inFlight(g int, d time.Duration, f func(n int64) error) (float64, error) {
	var n atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	t0 := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(t0) < d {
				if err := f(n.Add(1)); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return 0, err
	}
	return float64(n.Load()) / time.Since(t0).Seconds(), nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func main() {
	reps := flag.Int("reps", 3, "slices of each workload")
	slice := flag.Duration("slice", 400*time.Millisecond, "how long a slice runs")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tinystore-builds-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	bucket, err := kv.OpenBucket[[]byte](store, "bench")
	if err != nil {
		log.Fatal(err)
	}
	var next atomic.Int64
	if _, err := inFlight(writers, time.Hour, func(int64) error {
		i := int(next.Add(1)) - 1
		if i >= keys {
			return errDone
		}
		return bucket.Set(ctx, key(i), value)
	}); err != nil && err != errDone {
		log.Fatal(err)
	}
	limit, err := kv.OpenRateLimit(store, "api", kv.Rate(1_000_000_000, time.Second))
	if err != nil {
		log.Fatal(err)
	}
	var run atomic.Int64
	cases := []struct {
		name string
		run  func() (float64, error)
	}{
		{"Get, 1 in flight", func() (float64, error) {
			return inFlight(1, *slice, func(n int64) error {
				_, found, err := bucket.Get(ctx, key(int(n*7919%keys)))
				if err == nil && !found {
					err = fmt.Errorf("%s is missing", key(int(n*7919%keys)))
				}
				return err
			})
		}},
		{"Set, 64 goroutines", func() (float64, error) {
			r := run.Add(1)
			return inFlight(writers, *slice, func(n int64) error {
				return bucket.Set(ctx, fmt.Sprintf("w%d:%d", r, n), value)
			})
		}},
		{"Allow, one hot key", func() (float64, error) {
			return inFlight(1, *slice, func(int64) error {
				_, err := limit.Allow(ctx, "ip:hot")
				return err
			})
		}},
	}
	seen := map[string][]float64{}
	for range *reps {
		for _, c := range cases {
			rate, err := c.run()
			if err != nil {
				log.Fatalf("%s: %v", c.name, err)
			}
			seen[c.name] = append(seen[c.name], rate)
		}
	}
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}
	rates := map[string]float64{}
	for _, c := range cases {
		rates[c.name] = median(seen[c.name])
	}
	out, _ := json.Marshal(map[string]any{"rates": rates, "go": runtime.Version()})
	fmt.Println(string(out))
}

var errDone = fmt.Errorf("every key is written")
