package tinystore

import (
	"context"
	"log/slog"
	"time"

	"tinyshed.org/tinystore/internal/native"
)

// Options say how a store opens. The zero value is an ordinary store.
type Options struct {
	// Manual gives the store a test clock: nothing runs in the background,
	// and Maintain does the flushes, renewals and expiry sweeps when the
	// test says. The clock starts at Clock(), or at the time of Open.
	Manual bool
	// Clock is a manual store's clock, read before every call, so a test
	// moves time by changing what it returns; it is called from every
	// goroutine that uses the store. The store's clock never moves back: an
	// earlier time leaves it where it is. Only with Manual.
	Clock func() time.Time
	// Readers is how many reader connections to keep; 0 for one per core
	// (2 to 8).
	Readers int
	// Memory is a budget in bytes, at least 1 MiB, for the values the
	// store holds at once; 0 for none. A call holds the memory its value
	// may need before it makes the value (a write its row's size, or 1 MiB
	// until a codec has encoded it; a read the largest value, 1 MiB; a Scan
	// page 4 MiB) and waits its turn while the budget is spent, so the
	// process stays within it under any load. Inside Tx or View a call
	// cannot wait: it takes what is free or is ErrLimit at once, to run the
	// transaction again.
	Memory int64
	// MmapSize is how many bytes of kv.db each reader maps into memory and
	// reads without a system call; 0 for the default: 1 GiB, or none with a
	// Memory budget (whose resident memory would otherwise grow with the
	// pages read). NoMmap maps nothing; any other negative value is
	// ErrInvalid.
	//
	// Mapping makes a get over a file larger than the readers' page caches
	// cost no system call. Its price: a mapped page that cannot be read
	// stops the process with SIGBUS instead of returning an error. Turn it
	// off (NoMmap) for kv.db on a network filesystem, where a page can
	// vanish under a read, or wherever a failing disk must surface as an
	// error; or set a size to bound how much of a large file each reader
	// maps.
	MmapSize int64
	// ReleaseReadLocks has every read take and give back its read-mark lock
	// in kv.db-shm, as plain SQLite does. By default (false) a reader keeps
	// the lock between reads while the file is quiet, which spares each
	// read two system calls; it gives the lock back within milliseconds of
	// another process's commit and before this store's writer begins. A
	// Manual store never keeps it. Set it for a program that runs a
	// blocking checkpoint of kv.db itself and must not wait those
	// milliseconds.
	ReleaseReadLocks bool
	// ShareWithGroup creates the store's directory 0770 and its files
	// 0660, for processes of several users in one group. By default
	// (false) they are the owner's only, 0700 and 0600 whatever the umask:
	// anyone who can write kv.db-limits can reset every rate limit. Files
	// that exist keep their permissions.
	ShareWithGroup bool
	// Logger receives the engine's records about this store (memory at
	// 80%, a full memory refusing new keys, a failed maintenance, a config
	// value left out, a failed release of a once claim), each with the
	// attribute target, the engine module that wrote it. Nil sends them to
	// slog.Default(), as it sends records about no one store.
	Logger *slog.Logger
}

// NoMmap is Options.MmapSize for a store whose readers map nothing: every
// page a reader's cache lacks is read with pread.
const NoMmap int64 = native.MmapNone

// Store is an open store: a directory holding kv.db. Open buckets, limits,
// quotas and once handles on it with package kv. A Store is safe for
// concurrent use; Close it when done.
//
// It is the engine's handle under its public methods: package kv converts
// it back to open handles on it.
type Store native.Store

// n is the engine's handle.
func (s *Store) n() *native.Store { return (*native.Store)(s) }

// Open opens the store in dir, creating the directory and its kv.db if
// needed. A file of another application or a newer format is refused with
// ErrCorrupt or ErrInvalid and left untouched.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	startLogs()
	if ctx.Err() != nil {
		return nil, native.Cancelled(ctx, "")
	}
	if opts.Clock != nil && !opts.Manual {
		return nil, &Error{Kind: ErrInvalid, Message: "Options.Clock is the clock of a Manual store: set Manual too"}
	}
	start := time.Now()
	if opts.Clock != nil {
		start = opts.Clock()
	}
	n, err := native.Open(dir, opts.Manual, start, opts.Clock, native.OpenOptions{
		Readers: opts.Readers, Memory: opts.Memory, MmapSize: opts.MmapSize,
		ReleaseReadLocks: opts.ReleaseReadLocks, ShareWithGroup: opts.ShareWithGroup,
	})
	if err != nil {
		return nil, err
	}
	if opts.Logger != nil {
		loggers.Store(n.LogID(), opts.Logger)
	}
	return (*Store)(n), nil
}

// Close writes what memory holds (counters, rate limits, renewals) and
// closes the file. Calls after it, on the store and its handles, are
// ErrClosed; a second Close does nothing.
func (s *Store) Close() error {
	err := s.n().Close()
	forgetLogger(s.n().LogID())
	return err
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.n().Dir() }

// Maintenance says what one Maintain did.
type Maintenance struct {
	// Flushed is how many keys of counters and rate limits were written from memory.
	Flushed int
	// Renewed is how many idle keys had their renewal written.
	Renewed int
	// Cleared is how many rows hidden by a Clear were deleted.
	Cleared int
	// Expired is how many expired rows were deleted.
	Expired int
	// More says rows were left for the next pass: a sweep reached its bound.
	More bool
}

// Maintain flushes what memory holds, writes pending renewals and deletes
// cleared and expired rows in bounded batches. An ordinary store does this
// by itself; a Manual store only when Maintain is called.
func (s *Store) Maintain(ctx context.Context) (Maintenance, error) {
	if ctx.Err() != nil {
		return Maintenance{}, native.Cancelled(ctx, "")
	}
	m, err := s.n().Maintain()
	return Maintenance(m), err
}

// GroupStats says how the writer shared its commits since the store
// opened. The writer commits the writes waiting for it together, one
// transaction and one fsync a group, so writes per group is how well
// concurrent writes share the cost of durability.
type GroupStats struct {
	// Groups is how many groups the writer committed.
	Groups uint64
	// Writes is how many writes those groups held.
	Writes uint64
}

// WritesPerGroup is Writes / Groups; 0 before the first group.
func (g GroupStats) WritesPerGroup() float64 {
	if g.Groups == 0 {
		return 0
	}
	return float64(g.Writes) / float64(g.Groups)
}

// GroupStats is the writer's groups since Open. Take it before and after
// a run of writes and Sub them: writes per group is then the run's.
func (s *Store) GroupStats() (GroupStats, error) {
	g, w, err := s.n().GroupStats()
	return GroupStats{Groups: g, Writes: w}, err
}

// Sub is the groups and writes between an earlier GroupStats and g.
func (g GroupStats) Sub(earlier GroupStats) GroupStats {
	return GroupStats{Groups: g.Groups - earlier.Groups, Writes: g.Writes - earlier.Writes}
}

// Now is the store's clock: expiry is judged on it.
func (s *Store) Now() time.Time {
	if s.n().Manual() {
		_ = s.n().SyncClock()
	}
	return s.n().Now()
}

// Advance moves a Manual store's clock forward by d, for tests that do not
// give Options.Clock. The core refuses it as ErrInvalid on an ordinary
// store or for d < 0, since its clock never moves back.
func (s *Store) Advance(d time.Duration) error {
	if s.n().Manual() {
		_ = s.n().SyncClock()
	}
	return s.n().Advance(d)
}
