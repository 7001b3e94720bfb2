package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
)

// Store is an open store's handle.
//
// Store-level calls hold mu for reading and Close holds it for writing, so
// the handle is never freed under a call. Buckets hold the core's store
// themselves and do not go through this handle.
type Store struct {
	mu     sync.RWMutex
	ptr    *C.TsStore
	clock  func() time.Time
	manual bool
	dir    string
	logID  uint64 // the number its log records carry
}

// Maintenance is what one maintenance pass did.
type Maintenance struct {
	Flushed, Renewed, Cleared, Expired int  // keys flushed and renewed, rows cleared and expired
	More                               bool // whether rows were left for the next pass
}

// MmapNone is OpenOptions.MmapSize for no mapped reads (TS_MMAP_NONE).
const MmapNone = int64(C.TS_MMAP_NONE)

// OpenOptions are the store options the C ABI takes beside the clock.
type OpenOptions struct {
	// Readers is the reader connections and Memory the memory budget in
	// bytes, 0 for each default. MmapSize is the bytes of kv.db each reader
	// maps: 0 for the default, MmapNone for none. The core refuses another
	// negative number in any of them, naming it.
	Readers  int
	Memory   int64
	MmapSize int64
	// ReleaseReadLocks has readers give back their read-mark lock at every
	// read (TsStoreOptions.release_read_locks).
	ReleaseReadLocks bool
	// ShareWithGroup has the files the store creates be its group's too
	// (TsStoreOptions.share_with_group).
	ShareWithGroup bool
}

// Open opens the store in dir. A manual store has a test clock starting at
// start; clock, when not nil, is read before each call to move it.
func Open(dir string, manual bool, start time.Time, clock func() time.Time, o OpenOptions) (*Store, error) {
	opts := C.TsStoreOptions{
		manual: C.bool(manual), readers: C.int64_t(o.Readers), memory: C.int64_t(o.Memory),
		mmap_size: C.int64_t(o.MmapSize), release_read_locks: C.bool(o.ReleaseReadLocks),
		share_with_group: C.bool(o.ShareWithGroup),
	}
	if manual {
		opts.clock_ms = C.int64_t(start.UnixMilli())
	}
	d, n := text(dir)
	var ptr *C.TsStore
	var e *C.TsError
	if err := failure(C.ts_store_open(d, n, &opts, &ptr, &e), e, nil); err != nil {
		return nil, err
	}
	s := &Store{ptr: ptr, clock: clock, manual: manual, dir: dir, logID: uint64(C.ts_store_log_id(ptr))}
	// A safety net: Close frees the handle; a store dropped unclosed is
	// freed here, and the core closes it once its buckets are gone too.
	runtime.SetFinalizer(s, (*Store).free)
	return s, nil
}

func (s *Store) free() {
	release(&s.mu, &s.ptr, func(p *C.TsStore) { C.ts_store_free(p) })
}

// release frees the C handle at p once, holding mu for writing: a call
// holds it for reading, so none uses the handle while it is freed, and a
// call after finds it nil.
func release[P comparable](mu *sync.RWMutex, p *P, free func(P)) {
	mu.Lock()
	defer mu.Unlock()
	var none P
	if *p != none {
		free(*p)
		*p = none
	}
}

// closedErr is the error of a store-level call after Close.
func closedErr() error { return Refused("store_closed", "", "") }

// Close writes what memory holds, closes the file and frees the handle.
// Calls after it are Closed; a second Close does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return nil
	}
	var e *C.TsError
	err := failure(C.ts_store_close(s.ptr, &e), e, nil)
	C.ts_store_free(s.ptr)
	s.ptr = nil
	return err
}

// with runs f on the live handle, or answers Closed.
func (s *Store) with(f func(p *C.TsStore) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return closedErr()
	}
	return f(s.ptr)
}

// GroupStats is the writer's groups and the writes in them since Open.
func (s *Store) GroupStats() (groups, writes uint64, err error) {
	var g C.TsGroupStats
	err = s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_group_stats(p, &g, &e), e, nil)
	})
	return uint64(g.groups), uint64(g.writes), err
}

// Maintain runs one maintenance pass.
func (s *Store) Maintain() (Maintenance, error) {
	if err := s.SyncClock(); err != nil {
		return Maintenance{}, err
	}
	var m C.TsMaintenance
	err := s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_maintain(p, &m, &e), e, nil)
	})
	return Maintenance{
		Flushed: int(m.flushed), Renewed: int(m.renewed), Cleared: int(m.cleared), Expired: int(m.expired),
		More: bool(m.more),
	}, err
}

// SyncClock moves a manual store's clock to what its clock func shows,
// never back. It is called before every call of a manual store.
func (s *Store) SyncClock() error {
	if s.clock == nil {
		return nil
	}
	return s.FollowClock(s.clock())
}

// SetClock moves a manual store's clock to t; the core refuses a t before
// its time now, since the clock never moves back.
func (s *Store) SetClock(t time.Time) error { return s.setClock(t, false) }

// FollowClock moves a manual store's clock to t, or leaves it where it is
// when t is earlier (a racing call moved it further): the core's rule.
func (s *Store) FollowClock(t time.Time) error { return s.setClock(t, true) }

func (s *Store) setClock(t time.Time, follow bool) error {
	return s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_set_clock(p, C.int64_t(t.UnixMilli()), C.bool(follow), &e), e, nil)
	})
}

// Advance moves a manual store's clock forward by d; the core refuses a
// negative d, since the clock never moves back.
func (s *Store) Advance(d time.Duration) error {
	return s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_advance(p, C.int64_t(d), &e), e, nil)
	})
}

// Manual says whether the store has a test clock.
func (s *Store) Manual() bool { return s.manual }

// Dir is the directory the store was opened in.
func (s *Store) Dir() string { return s.dir }

// LogID is the number the store's log records carry (see ForwardLogs).
func (s *Store) LogID() uint64 { return s.logID }

// Now is the store's clock.
func (s *Store) Now() time.Time {
	var ms int64
	if err := s.with(func(p *C.TsStore) error {
		ms = int64(C.ts_store_now(p))
		return nil
	}); err != nil {
		return time.Now()
	}
	return time.UnixMilli(ms)
}

// ParseDuration reads a duration in the product's text with the core's parser.
func ParseDuration(s string) (time.Duration, error) {
	t, n := text(s)
	var ns C.int64_t
	var e *C.TsError
	if err := failure(C.ts_parse_duration(t, n, &ns, &e), e, nil); err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// ParseRate reads a rate in the product's text with the core's parser.
func ParseRate(s string) (uint64, time.Duration, error) {
	t, n := text(s)
	var count C.uint64_t
	var ns C.int64_t
	var e *C.TsError
	if err := failure(C.ts_parse_rate(t, n, &count, &ns, &e), e, nil); err != nil {
		return 0, 0, err
	}
	return uint64(count), time.Duration(ns), nil
}

// FailNextCommitForTests is a TEST HOOK, not for applications: the store's
// next group commit fails as a failed fsync would, so that each of its
// writes answers OutcomeUnknown.
func (s *Store) FailNextCommitForTests() error {
	return s.with(func(p *C.TsStore) error {
		var e *C.TsError
		return failure(C.ts_store_fail_next_commit_for_tests(p, &e), e, nil)
	})
}
