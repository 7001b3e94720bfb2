package kv_test

// Store options beside the memory budget: Options.MmapSize (how much of
// kv.db each reader maps), and the writer's GroupStats.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// mapsFile says whether this process maps the file at path (as SQLite's
// mapped reads do), from /proc/self/maps; ok is false where there is none.
func mapsFile(t *testing.T, path string) (mapped, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), " "+path) {
			return true, true
		}
	}
	return false, true
}

func TestMmapSizeEachSettingReadsWhatWasWrittenAndNoMmapMapsNothing(t *testing.T) {
	for _, size := range []int64{0, tinystore.NoMmap, 64 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			file, err := filepath.EvalSymlinks(dir)
			ok(t, err)
			file = filepath.Join(file, "kv.db")
			for round := range 2 {
				store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{MmapSize: size}))
				texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
				if round == 0 {
					for i := range 200 {
						ok(t, texts.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", i)))
					}
				}
				for i := range 200 {
					if v, found := get(t, texts, fmt.Sprint("k", i)); !found || v != strings.Repeat("v", i) {
						t.Fatalf("MmapSize %d, round %d: k%d is %q %v", size, round, i, v, found)
					}
				}
				// Once the close has moved the writes from the WAL into kv.db,
				// the reads of the second round read kv.db's pages.
				if mapped, known := mapsFile(t, file); round == 1 && known && mapped != (size != tinystore.NoMmap) {
					t.Fatalf("MmapSize %d: kv.db mapped is %v", size, mapped)
				}
				ok(t, store.Close())
			}
		})
	}
}

func TestMmapSizeNegativeIsInvalidNamesTheOptionAndOpensNothing(t *testing.T) {
	dir := t.TempDir()
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, tinystore.Options{}))
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	ok(t, texts.Set(ctx, "k", "v"))
	ok(t, store.Close())
	before := must[[]byte](t)(os.ReadFile(filepath.Join(dir, "kv.db")))
	never := filepath.Join(t.TempDir(), "never")
	for _, size := range []int64{-2, -(1 << 30)} {
		for _, at := range []string{dir, never} {
			s, err := tinystore.Open(ctx, at, tinystore.Options{MmapSize: size})
			if err == nil {
				_ = s.Close()
				t.Fatalf("MmapSize %d opened %s", size, at)
			}
			if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("mmap_size is %d", size)) {
				t.Fatalf("MmapSize %d: %v, want ErrInvalid naming the option mmap_size", size, err)
			}
			want := fmt.Sprintf("tinystore: invalid: the store option mmap_size is %d: a size in bytes is a whole number from 0 to 2^64-1; nothing was opened", size)
			if err.Error() != want {
				t.Fatalf("MmapSize %d: %q, want the core's one text %q", size, err, want)
			}
		}
	}
	if after := must[[]byte](t)(os.ReadFile(filepath.Join(dir, "kv.db"))); !bytes.Equal(before, after) {
		t.Fatal("a refused open changed kv.db")
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("a refused open created its directory: %v", err)
	}
}

func TestGroupStatsCountEveryWriteOnceAndConcurrentSetsShareGroups(t *testing.T) {
	store, _ := openManual(t)
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	before := must[tinystore.GroupStats](t)(store.GroupStats())
	for i := range 10 {
		ok(t, texts.Set(ctx, fmt.Sprint("one", i), "v"))
	}
	alone := must[tinystore.GroupStats](t)(store.GroupStats()).Sub(before)
	if alone.Writes != 10 || alone.Groups != 10 {
		t.Fatalf("10 Sets one after another: %+v, want 10 writes in 10 groups", alone)
	}
	// 64 Sets at once: every write counted once, in fewer groups than writes.
	// Sets queued while the writer commits a group go in the next one, so
	// several rounds are all but sure to share; one round may not on a busy
	// machine, which is why the check is on the total.
	before = must[tinystore.GroupStats](t)(store.GroupStats())
	const rounds, writers = 5, 64
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- texts.Set(ctx, fmt.Sprint("many", r, "-", g), "v")
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			ok(t, err)
		}
	}
	many := must[tinystore.GroupStats](t)(store.GroupStats()).Sub(before)
	if many.Writes != rounds*writers || many.Groups == 0 || many.Groups >= many.Writes {
		t.Fatalf("%d Sets at once, %d times: %+v, want every write in fewer groups", writers, rounds, many)
	}
	if many.WritesPerGroup() <= 1 {
		t.Fatalf("writes per group %.2f", many.WritesPerGroup())
	}
	ok(t, store.Close())
	if _, err := store.GroupStats(); !errors.Is(err, tinystore.ErrClosed) {
		t.Fatalf("GroupStats after Close: %v, want ErrClosed", err)
	}
}
