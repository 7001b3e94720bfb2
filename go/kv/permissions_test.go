//go:build unix

package kv_test

// Who may read and write a new store's files: its owner only, or its group
// too with Options.ShareWithGroup (KV-19): anyone who can write
// kv.db-limits can reset every rate limit.

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// modesOfANewStore opens a new store under the usual umask (which lets 0644
// files through), writes a key (which makes the WAL) and returns the
// permission bits of its directory, kv.db and kv.db-wal while it is open.
// The umask is the process's: no test here runs in parallel, and it is put
// back.
func modesOfANewStore(t *testing.T, opts tinystore.Options) map[string]os.FileMode {
	t.Helper()
	before := syscall.Umask(0o022)
	defer syscall.Umask(before)
	dir := filepath.Join(t.TempDir(), "store", "data")
	store := must[*tinystore.Store](t)(tinystore.Open(ctx, dir, opts))
	defer func() { ok(t, store.Close()) }()
	texts := must[*kv.Bucket[string]](t)(kv.OpenBucket[string](store, "texts"))
	ok(t, texts.Set(ctx, "k", "v"))
	modes := map[string]os.FileMode{}
	for name, path := range map[string]string{"dir": dir, "kv.db": filepath.Join(dir, "kv.db"), "kv.db-wal": filepath.Join(dir, "kv.db-wal")} {
		modes[name] = must[os.FileInfo](t)(os.Stat(path)).Mode().Perm()
	}
	return modes
}

func TestKV19ANewStoresFilesAreItsOwnersOnlyUnlessSharedWithItsGroup(t *testing.T) {
	for _, c := range []struct {
		opts      tinystore.Options
		dir, file os.FileMode
	}{
		{tinystore.Options{}, 0o700, 0o600},
		{tinystore.Options{ShareWithGroup: true}, 0o770, 0o660},
	} {
		got := modesOfANewStore(t, c.opts)
		want := map[string]os.FileMode{"dir": c.dir, "kv.db": c.file, "kv.db-wal": c.file}
		for name, mode := range want {
			if got[name] != mode {
				t.Errorf("ShareWithGroup %v: %s is %o, want %o", c.opts.ShareWithGroup, name, got[name], mode)
			}
		}
	}
}
