package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/cases"
	"tinyshed.org/tinystore/kv"
)

// start is the clock of every case: 2026-10-20T09:00:00Z.
var start = time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)

var ctx = context.Background()

type step = map[string]any

type testCase struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Steps []step `json:"steps"`
	// File is the name of the case's file in tests/conformance/cases.
	File string `json:"-"`
}

// unknown is a panic for a step the runner does not know: the case fails,
// whatever it expects, so that no case is skipped in silence.
type unknown struct{ what string }

// failed is the error a once function of a case returns ("fails").
type failed struct{ message string }

func (f *failed) Error() string { return "FAILED: " + f.message }

// errRollback is what a "tx" with "fail" returns from its function.
var errRollback = errors.New("the case asks the transaction to fail")

// handle is an open handle of a case: one of its fields is set.
type handle struct {
	bucket   cases.Bucket
	counters *kv.Counters
	rate     *kv.RateLimit
	quota    *kv.Quota
	once     cases.Once
}

type outKind int

const (
	outNothing outKind = iota
	outJSON            // json: bool, json.Number, nil or an object
	outValue           // value and found
	outAllow           // allow
	outEntry           // value, version and expires
)

// out is what a call gave back, before it is compared.
type out struct {
	kind    outKind
	json    any
	value   cases.Value
	found   bool
	allow   kv.Allowance
	version kv.Version // of a set or an entry
	expires *int64     // ms until an entry expires; nil if it does not
	written *bool      // whether create_entry wrote its entry; nil for others
}

type runner struct {
	dir      string
	store    *tinystore.Store
	opens    []step
	handles  map[string]handle
	versions map[string]kv.Version
	ran      atomic.Int64
	// inside is the ctx a run of once gave its function, while the run's
	// own steps run: a call inside the run passes it on (nil: outside any).
	inside context.Context
}

func open(dir string, at time.Time) (*tinystore.Store, error) {
	return tinystore.Open(ctx, dir, tinystore.Options{Manual: true, Clock: func() time.Time { return at }})
}

func text(s step, k string) string {
	v, ok := s[k].(string)
	if !ok {
		panic(unknown{fmt.Sprintf("the field %q is not text: %#v", k, s[k])})
	}
	return v
}

// option is a step's field when given and not null.
func option(s step, k string) (any, bool) {
	v, ok := s[k]
	return v, ok && v != nil
}

func duration(s step, k string) (time.Duration, bool, error) {
	v, ok := option(s, k)
	if !ok {
		return 0, false, nil
	}
	d, err := tinystore.ParseDuration(v.(string))
	return d, true, err
}

// spanOptions is the option of type O that each duration s gives makes
// (ttl, idle, flush_every, keep), sorted by field; a field whose option
// is not an O (an idle for counters) is not read, as the other runners do.
func spanOptions[O any](s step) ([]O, error) {
	makers := map[string]func(time.Duration) any{
		"flush_every": func(d time.Duration) any { return kv.FlushEvery(d) },
		"idle":        func(d time.Duration) any { return kv.Idle(d) },
		"keep":        func(d time.Duration) any { return kv.Keep(d) },
		"ttl":         func(d time.Duration) any { return kv.TTL(d) },
	}
	var opts []O
	for _, k := range slices.Sorted(maps.Keys(makers)) {
		d, given, err := duration(s, k)
		if err != nil {
			return nil, err
		}
		if o, fits := makers[k](d).(O); given && fits {
			opts = append(opts, o)
		}
	}
	return opts, nil
}

func (r *runner) openHandle(s step) error {
	name := text(s, "name")
	var h handle
	var err error
	switch kind := text(s, "kind"); kind {
	case "bucket":
		var opts []kv.BucketOption
		if opts, err = spanOptions[kv.BucketOption](s); err != nil {
			return err
		}
		if c, ok := s["codec"]; ok {
			if c != "refusing" {
				return fmt.Errorf("the Go cases do not know the codec %v", c)
			}
			opts = append(opts, kv.WithCodec(refusing{}))
		}
		h.bucket, err = cases.OpenBucket(r.store, text(s, "type"), name, opts...)
	case "counters":
		var opts []kv.CountersOption
		if opts, err = spanOptions[kv.CountersOption](s); err != nil {
			return err
		}
		h.counters, err = kv.OpenCounters(r.store, name, opts...)
	case "rate_limit":
		n, per, err := tinystore.ParseRate(text(s, "rate"))
		if err != nil {
			return err
		}
		opts := []kv.RateLimitOption{kv.Rate(n, per)}
		if b, ok := option(s, "burst"); ok {
			opts = append(opts, kv.Burst(int(cases.Int(b))))
		}
		h.rate, err = kv.OpenRateLimit(r.store, name, opts...)
		if err != nil {
			return err
		}
	case "quota":
		windows, _ := s["windows"].(map[string]any)
		names := slices.Sorted(maps.Keys(windows))
		var opts []kv.QuotaOption
		for _, w := range names {
			n, per, err := tinystore.ParseRate(windows[w].(string))
			if err != nil {
				return err
			}
			opts = append(opts, kv.Window(w, n, per))
		}
		h.quota, err = kv.OpenQuota(r.store, name, opts...)
	case "once":
		var opts []kv.OnceOption
		if opts, err = spanOptions[kv.OnceOption](s); err != nil {
			return err
		}
		h.once, err = cases.OpenOnce(r.store, text(s, "type"), name, opts...)
	default:
		panic(unknown{"the Go runner does not know the kind " + strconv.Quote(kind)})
	}
	if err != nil {
		return err
	}
	r.handles[text(s, "as")] = h
	return nil
}

// handle is the handle a call is on, under its owners, and joined to tx
// when it is not nil (a bucket joins it at its call).
func (r *runner) handle(s step, tx *kv.Tx) handle {
	h, ok := r.handles[text(s, "on")]
	if !ok {
		panic(unknown{"no handle " + text(s, "on") + " was opened"})
	}
	var owners []any
	under, _ := s["under"].([]any)
	for _, o := range under {
		owners = append(owners, cases.Key(o))
	}
	switch {
	case owners == nil && tx == nil:
	case h.bucket != nil:
		h.bucket = h.bucket.Under(owners...)
	case h.counters != nil:
		h.counters = joined(h.counters.Under(owners...), tx, (*kv.Counters).WithTx)
	case h.rate != nil:
		h.rate = joined(h.rate.Under(owners...), tx, (*kv.RateLimit).WithTx)
	case h.quota != nil:
		h.quota = joined(h.quota.Under(owners...), tx, (*kv.Quota).WithTx)
	case h.once != nil:
		h.once = joined(h.once.Under(owners...), tx, cases.Once.WithTx)
	}
	return h
}

// joined is h joined to tx by its withTx, or h itself when tx is nil.
func joined[H any](h H, tx *kv.Tx, withTx func(H, *kv.Tx) H) H {
	if tx == nil {
		return h
	}
	return withTx(h, tx)
}

func (r *runner) reopen() error {
	at := r.store.Now()
	_ = r.store.Close()
	store, err := open(r.dir, at)
	if err != nil {
		return err
	}
	r.store = store
	r.handles = map[string]handle{}
	for _, s := range r.opens {
		if err := r.openHandle(s); err != nil {
			return fmt.Errorf("opening %s again: %w", text(s, "as"), err)
		}
	}
	return nil
}

// keyList is keys as the cases compare them: text, any byte that is not
// UTF-8 replaced, as the Rust runner's lossy reading does.
func keyList(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = strings.ToValidUTF8(k, "\uFFFD")
	}
	return out
}

func number(i int64) any { return cases.JSONNumber(i) }

// success says whether an answer counts as a success of a race.
func success(o out, err error) bool {
	switch {
	case err != nil:
		return false
	case o.kind == outJSON:
		return o.json != nil && o.json != false
	case o.kind == outValue:
		return o.found
	case o.kind == outAllow:
		return o.allow.OK
	}
	return true
}

var codes = map[string]error{
	"INVALID": tinystore.ErrInvalid, "LIMIT": tinystore.ErrLimit, "CONFLICT": tinystore.ErrConflict,
	"CORRUPT": tinystore.ErrCorrupt, "CLOSED": tinystore.ErrClosed, "OUTCOME_UNKNOWN": tinystore.ErrOutcomeUnknown,
	"IO": tinystore.ErrIO, "CANCELLED": tinystore.ErrCancelled,
}

// millis is a case's duration in ms; nil for null.
func millis(v any) *int64 {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	d, err := tinystore.ParseDuration(s)
	if err != nil {
		panic(unknown{"a bad duration in a case: " + s})
	}
	ms := d.Milliseconds()
	return &ms
}

func until(t, now time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ms := t.Sub(now).Milliseconds()
	return &ms
}

func show(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10) + " ms"
}

func sameMillis(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func checkAllow(want map[string]any, a kv.Allowance, now time.Time) error {
	var problems []string
	if w, ok := want["ok"]; ok && w != a.OK {
		problems = append(problems, fmt.Sprintf("ok %v != %v", a.OK, w))
	}
	if w, ok := want["left"]; ok && cases.Int(w) != a.Left {
		problems = append(problems, fmt.Sprintf("left %d != %v", a.Left, w))
	}
	if w, ok := want["retry_in"]; ok && !sameMillis(millis(w), until(a.RetryAt, now)) {
		problems = append(problems, fmt.Sprintf("retry_in %s != %v", show(until(a.RetryAt, now)), w))
	}
	windows, _ := want["windows"].(map[string]any)
	for name, w := range windows {
		got, ok := a.Windows[name]
		if !ok {
			problems = append(problems, "no window "+name)
			continue
		}
		fields := w.(map[string]any)
		for f, v := range map[string]int64{"used": got.Used, "limit": got.Limit, "left": got.Left} {
			if x, ok := fields[f]; ok && cases.Int(x) != v {
				problems = append(problems, fmt.Sprintf("%s.%s %d != %v", name, f, v, x))
			}
		}
		if x, ok := fields["resets_in"]; ok && !sameMillis(millis(x), until(got.ResetsAt, now)) {
			problems = append(problems, fmt.Sprintf("%s.resets_in %s != %v", name, show(until(got.ResetsAt, now)), x))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// check compares an answer with a step's "expect" or "error".
func (r *runner) check(s step, o out, err error) error {
	if code, ok := s["error"].(string); ok {
		if err == nil {
			return fmt.Errorf("expected %s, got success", code)
		}
		var f *failed
		var fine bool
		if code == "FAILED" {
			fine = errors.As(err, &f) // the function's own error, as it returned it
		} else {
			kind, known := codes[code]
			if !known {
				panic(unknown{"the error code " + code})
			}
			fine = errors.Is(err, kind)
		}
		if !fine {
			return fmt.Errorf("expected %s, got %v", code, err)
		}
		var ke *kv.KeyError
		var te *tinystore.Error
		isKey := errors.As(err, &ke)
		if b, ok := s["error_bucket"]; ok {
			bucket := ""
			if isKey {
				bucket = ke.Bucket
			} else if errors.As(err, &te) {
				bucket = te.Bucket
			}
			if bucket != b {
				return fmt.Errorf("the error should name bucket %v: %v", b, err)
			}
		}
		if k, ok := s["error_key"]; ok && (!isKey || ke.Path != cases.Text(k)) {
			return fmt.Errorf("the error should name key %v: %v", k, err)
		}
		if m, ok := s["error_message"]; ok && (!errors.As(err, &te) || te.Message != m) {
			return fmt.Errorf("the error should say %q: %v", m, err)
		}
		// The text after "tinystore: " and the kind's word, with the bucket and key, is the same in every language.
		if m, ok := s["error_text"]; ok {
			_, after, _ := strings.Cut(strings.TrimPrefix(err.Error(), "tinystore: "), ": ")
			if after != m {
				return fmt.Errorf("the error should read %q after its kind: %q", m, err.Error())
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("unexpected error: %v", err)
	}
	want, ok := s["expect"]
	if !ok {
		return nil
	}
	switch o.kind {
	case outNothing:
		return errors.New("a call that answers nothing has no expect")
	case outValue:
		switch {
		case want == nil && !o.found:
			return nil
		case want != nil && o.found && o.value.Same(want):
			return nil
		case o.found:
			return fmt.Errorf("expected %v, got %s", want, o.value)
		}
		return fmt.Errorf("expected %v, got nothing", want)
	case outAllow:
		w, _ := want.(map[string]any)
		return checkAllow(w, o.allow, r.store.Now())
	case outEntry:
		fields, ok := want.(map[string]any)
		if !ok {
			return fmt.Errorf("expected %v, got an entry of %s", want, o.value)
		}
		for f, w := range fields {
			var fine bool
			switch f {
			case "value":
				fine = o.value.Same(w)
			case "version":
				saved, ok := r.versions[w.(string)]
				fine = ok && saved == o.version
			case "expires_in":
				fine = sameMillis(millis(w), o.expires)
			case "written":
				fine = o.written != nil && *o.written == w.(bool)
			default:
				panic(unknown{"an entry has no field " + f})
			}
			if !fine {
				return fmt.Errorf("%s: expected %v, got value %s, version %s, expires_in %s", f, w, o.value, o.version, show(o.expires))
			}
		}
		return nil
	}
	wantObj, wok := want.(map[string]any)
	gotObj, gok := o.json.(map[string]any)
	if wok && gok {
		for f, w := range wantObj {
			if !cases.SameJSONValues(w, gotObj[f]) {
				return fmt.Errorf("%s: expected %v, got %v", f, w, o.json)
			}
		}
		return nil
	}
	if !cases.SameJSONValues(want, o.json) {
		return fmt.Errorf("expected %v, got %v", want, o.json)
	}
	return nil
}

func (r *runner) step(s step) error {
	switch op := text(s, "op"); op {
	case "open":
		err := r.openHandle(s)
		if _, wantsError := s["error"]; err == nil && !wantsError {
			r.opens = append(r.opens, s)
		}
		return r.check(s, out{}, err)
	case "advance":
		back, neg := strings.CutPrefix(text(s, "by"), "-")
		d, err := tinystore.ParseDuration(back)
		if err != nil {
			return err
		}
		if neg {
			d = -d
		}
		return r.check(s, out{}, r.store.Advance(d))
	case "maintain":
		m, err := r.store.Maintain(ctx)
		if err != nil {
			return err
		}
		got := map[string]int{"flushed": m.Flushed, "renewed": m.Renewed, "cleared": m.Cleared, "expired": m.Expired}
		want, _ := s["expect"].(map[string]any)
		for f, w := range want {
			if v, ok := got[f]; !ok || int64(v) != cases.Int(w) {
				return fmt.Errorf("maintain %s: expected %v, got %+v", f, w, got)
			}
		}
		return nil
	case "reopen":
		return r.reopen()
	case "close":
		return r.store.Close()
	case "race":
		return r.race(s)
	case "tx":
		var inner error
		panics := s["fail"] == "panic"
		fail := s["fail"] == true || panics
		tx := func() (err error) {
			if panics {
				// The panic goes on out of store.Tx, after its rollback.
				defer func() {
					if p := recover(); p != nil {
						err = errRollback
					}
				}()
			}
			return r.store.Tx(ctx, func(tx *kv.Tx) error {
				steps, _ := s["steps"].([]any)
				for _, x := range steps {
					in := x.(map[string]any)
					var o out
					var err error
					if text(in, "op") == "tx" {
						// Another transaction of the same store, from inside this one.
						o, err = out{kind: outNothing}, r.store.Tx(ctx, func(*kv.Tx) error { return nil })
					} else {
						o, err = r.call(in, tx, 0)
					}
					if c := r.check(in, o, err); c != nil {
						inner = fmt.Errorf("in tx, %s: %w", text(in, "op"), c)
						return inner
					}
				}
				if panics {
					panic(errRollback)
				}
				if fail {
					return errRollback
				}
				return nil
			})
		}
		err := tx()
		switch {
		case inner != nil:
			return inner
		case fail && errors.Is(err, errRollback), !fail && err == nil:
			return nil
		}
		return fmt.Errorf("tx ended with %v", err)
	default:
		o, err := r.call(s, nil, 0)
		if name, ok := s["save"].(string); ok && err == nil && (o.kind == outEntry || op == "set") {
			r.versions[name] = o.version
		}
		return r.check(s, o, err)
	}
}

func (r *runner) race(s step) error {
	n := int(cases.Int(s["n"]))
	inner, _ := s["step"].(map[string]any)
	before := r.ran.Load()
	wins := make([]bool, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			o, err := r.call(inner, nil, i)
			wins[i] = success(o, err)
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	got := 0
	for _, w := range wins {
		if w {
			got++
		}
	}
	if want := int(cases.Int(s["expect_successes"])); got != want {
		return fmt.Errorf("race: %d of %d succeeded, expected %d", got, n, want)
	}
	if w, ok := s["expect_ran"]; ok {
		if ran := r.ran.Load() - before; ran != cases.Int(w) {
			return fmt.Errorf("race: the function ran %d times, expected %v", ran, w)
		}
	}
	return nil
}

func runCase(t *testing.T, c testCase) error {
	return runCaseAt(t.TempDir(), c)
}

// runCaseAt runs a case on the store at dir: a new directory, or a
// PostgreSQL location whose schema is empty.
func runCaseAt(dir string, c testCase) (err error) {
	store, err := open(dir, start)
	if err != nil {
		return err
	}
	r := &runner{dir: dir, store: store, handles: map[string]handle{}, versions: map[string]kv.Version{}}
	defer func() { _ = r.store.Close() }()
	for i, s := range c.Steps {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					u, ok := p.(unknown)
					if !ok {
						panic(p)
					}
					err = fmt.Errorf("not run: %s", u.what)
				}
			}()
			return r.step(s)
		}()
		if err != nil {
			return fmt.Errorf("step %d (%v): %w", i+1, s["op"], err)
		}
	}
	return nil
}

func loadCases(t *testing.T, root string) []testCase {
	files, err := filepath.Glob(filepath.Join(root, "tests", "conformance", "cases", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases under %s: %v", root, err)
	}
	sort.Strings(files)
	var all []testCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []testCase
		if err := cases.Decode(data, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range cs {
			cs[i].File = filepath.Base(f)
		}
		all = append(all, cs...)
	}
	return all
}

func TestConformanceCasesKV01ToKV19(t *testing.T) {
	root, err := cases.Root()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, c := range loadCases(t, root) {
		id, err := strconv.Atoi(strings.TrimPrefix(c.ID, "KV-"))
		if err != nil {
			t.Fatalf("a case's id %q is not KV-<n>", c.ID)
		}
		counts[id]++
		t.Run(c.ID+" "+c.Title, func(t *testing.T) {
			if err := runCase(t, c); err != nil {
				t.Fatalf("%s %q, %v", c.ID, c.Title, err)
			}
		})
	}
	ids := slices.Sorted(maps.Keys(counts))
	var report strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&report, "conformance go KV-%d %d\n", id, counts[id])
	}
	t.Log("\n" + report.String())
	// tests/conformance/report.py joins every language's counts from here.
	dir := filepath.Join(root, "target", "conformance")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.txt"), []byte(report.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 19; id++ {
		if counts[id] == 0 {
			t.Errorf("no case for KV-%d", id)
		}
	}
}

// refusing is the cases' "codec": "refusing" (tests/conformance/README.md).
type refusing struct{}

func (refusing) Encode(value any) ([]byte, error) {
	s := value.(string)
	if s == "refuse" {
		return nil, errors.New("the test codec refuses this value")
	}
	return []byte(s), nil
}

func (refusing) Decode(data []byte, into any) error {
	if string(data) == "bad" {
		return errors.New("the test codec cannot read this")
	}
	*into.(*string) = string(data)
	return nil
}
