package kv_test

// Options.ReleaseReadLocks: whether a reader keeps its read-mark lock in
// kv.db-shm between reads of a quiet file (tinystore::Options::
// keep_read_locks), seen from outside through /proc/locks (Linux).

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// SQLite's WAL read marks are bytes 123 to 127 of kv.db-shm (its locks
// start at byte 120; the read marks are locks 3 to 7).
const readMarkFirst, readMarkLast = 123, 127

// readMarkLocked says whether this process holds a lock on one of shm's
// read marks; known is false where /proc/locks cannot be read.
func readMarkLocked(t *testing.T, shm string) (locked, known bool) {
	t.Helper()
	st, err := os.Stat(shm)
	if err != nil {
		t.Fatal(err)
	}
	inode := st.Sys().(*syscall.Stat_t).Ino
	text, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, false
	}
	pid := strconv.Itoa(os.Getpid())
	for _, line := range strings.Split(string(text), "\n") {
		// "1: POSIX  ADVISORY  READ 4242 fd:01:1234 123 123"
		f := strings.Fields(line)
		if len(f) < 8 || f[1] != "POSIX" || f[4] != pid {
			continue
		}
		dev := strings.Split(f[5], ":")
		if ino, err := strconv.ParseUint(dev[len(dev)-1], 10, 64); err != nil || ino != inode {
			continue
		}
		start, _ := strconv.ParseInt(f[6], 10, 64)
		end := int64(1 << 62)
		if f[7] != "EOF" {
			end, _ = strconv.ParseInt(f[7], 10, 64)
		}
		if start <= readMarkLast && end >= readMarkFirst {
			return true, true
		}
	}
	return false, true
}

// lockedAfterReads reads one key of a quiet store for up to d, looking
// after each read for a read-mark lock this process still holds.
func lockedAfterReads(t *testing.T, d time.Duration, opts tinystore.Options) (locked, known bool) {
	t.Helper()
	dir := t.TempDir()
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, opts))
	defer store.Close()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	ok(t, texts.Set(ctx, "k", "v"))
	shm := filepath.Join(dir, "kv.db-shm")
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if v, found := get(t, texts, "k"); !found || v != "v" {
			t.Fatalf("k is %q %v", v, found)
		}
		if locked, known := readMarkLocked(t, shm); !known || locked {
			return locked, known
		}
	}
	return false, true
}

func TestReleaseReadLocksAQuietStoreKeepsItsReadLockUnlessTold(t *testing.T) {
	// A lock is kept once the file has been quiet for 20 ms: well inside 5 s.
	locked, known := lockedAfterReads(t, 5*time.Second, tinystore.Options{})
	if !known {
		t.Skip("no /proc/locks here")
	}
	if !locked {
		t.Fatal("a quiet store's reader kept no read-mark lock in 5 s of reads")
	}
	if locked, _ := lockedAfterReads(t, 300*time.Millisecond, tinystore.Options{ReleaseReadLocks: true}); locked {
		t.Fatal("with ReleaseReadLocks a reader kept its read-mark lock after a read")
	}
}
