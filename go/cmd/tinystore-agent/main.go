// Command tinystore-agent is the Go agent of the cross-language tests
// (tests/cross.py). Its commands and what they print are in
// tests/interchange/README.md and tests/processes/README.md; it does what
// the Rust agent (tests/agents/rust) does, through the public Go API.
//
//	tinystore-agent ix-write DIR OWNER
//	tinystore-agent hb-write DIR OWNER USER
//	tinystore-agent take-rounds DIR N
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/cases"
	"tinyshed.org/tinystore/kv"
)

var ctx = context.Background()

// say prints a line; os.Stdout is unbuffered, so the driver reads it at once.
func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

type item struct {
	Type  string `json:"type"`
	Key   any    `json:"key"`
	Value any    `json:"value"`
}

func fixture() ([]item, error) {
	root, err := cases.Root()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "tests", "interchange", "values.json"))
	if err != nil {
		return nil, err
	}
	var items []item
	return items, cases.Decode(data, &items)
}

func ixBucket(store *tinystore.Store, typ, owner string) (cases.Bucket, error) {
	b, err := cases.OpenBucket(store, typ, "ix-"+typ)
	if err != nil {
		return nil, err
	}
	return b.Under(owner), nil
}

func ixWrite(store *tinystore.Store, owner string) error {
	items, err := fixture()
	if err != nil {
		return err
	}
	for _, it := range items {
		b, err := ixBucket(store, it.Type, owner)
		if err != nil {
			return err
		}
		if _, err := b.Set(ctx, cases.Text(it.Key), it.Value); err != nil {
			return err
		}
	}
	say("ok")
	return nil
}

// expected is what the writer of owner's branch wrote for an item. JS
// numbers carry no NaN payload, so the JS agents (node, bun) write a NaN
// marked "js": "NaN" as JS's own NaN, 7ff8000000000000
// (tests/conformance/README.md).
func expected(it item, owner string) any {
	if v, ok := it.Value.(map[string]any); ok && v["js"] == "NaN" && (owner == "node" || owner == "bun") {
		return map[string]any{"bits": "7ff8000000000000"}
	}
	return it.Value
}

func ixRead(store *tinystore.Store, owner string) (bool, error) {
	items, err := fixture()
	if err != nil {
		return false, err
	}
	bad := 0
	var types []string
	want := map[string][]string{}
	for _, it := range items {
		key := cases.Text(it.Key)
		if !slices.Contains(types, it.Type) {
			types = append(types, it.Type)
		}
		want[it.Type] = append(want[it.Type], key)
		b, err := ixBucket(store, it.Type, owner)
		if err != nil {
			return false, err
		}
		v, found, err := b.Get(ctx, key)
		switch {
		case err != nil:
			bad++
			say("MISMATCH %s %s %q: %v", owner, it.Type, key, err)
		case !found:
			bad++
			say("MISMATCH %s %s %q: got nothing", owner, it.Type, key)
		case !v.Same(expected(it, owner)):
			bad++
			say("MISMATCH %s %s %q: got %s", owner, it.Type, key, v)
		}
	}
	for _, typ := range types {
		b, err := ixBucket(store, typ, owner)
		if err != nil {
			return false, err
		}
		got, _, err := b.List(ctx, kv.ListOptions{Limit: 1000})
		if err != nil {
			return false, err
		}
		keys := slices.Clone(want[typ])
		slices.Sort(keys) // Go orders strings by their bytes
		if !slices.Equal(got, keys) {
			bad++
			say("MISMATCH %s %s list order: got %q, want %q", owner, typ, got, keys)
		}
	}
	if bad == 0 {
		say("ok %d", len(items))
	}
	return bad == 0, nil
}

func run(args []string) (bool, error) {
	if len(args) < 2 {
		return false, errors.New("usage: tinystore-agent COMMAND DIR [ARGS...]")
	}
	cmd := args[0]
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	num := func(i int) int {
		n, _ := strconv.Atoi(arg(i))
		return n
	}
	store, err := tinystore.Open(ctx, arg(1), tinystore.Options{})
	if err != nil {
		return false, err
	}
	ok, err := command(store, cmd, arg, num)
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	return ok, err
}

func command(store *tinystore.Store, cmd string, arg func(int) string, num func(int) int) (bool, error) {
	if handled, err := limitsCommand(store, cmd, arg, num); handled {
		return err == nil, err
	}
	switch cmd {
	case "ix-write":
		return true, ixWrite(store, arg(2))
	case "ix-read":
		return ixRead(store, arg(2))
	case "ix-raw-copy":
		return ixRawCopy(store, arg(2), arg(3))
	case "hb-write", "hb-read", "hb-take":
		user, err := userArg(arg(3))
		if err != nil {
			return false, err
		}
		run := map[string]func(*tinystore.Store, string, int64) (bool, error){
			"hb-write": hbWrite, "hb-read": hbRead, "hb-take": hbTake,
		}[cmd]
		return run(store, arg(2), user)
	case "clear-writes":
		b, err := kv.OpenBucket[string](store, "race-clear")
		if err != nil {
			return false, err
		}
		under := b.Under("b")
		startLine()
		end := time.Now().Add(time.Duration(num(3)) * time.Millisecond)
		for i := 0; time.Now().Before(end); i++ {
			key := fmt.Sprintf("%s%d", arg(2), i)
			t0 := time.Now().UnixMilli()
			if err := under.Set(ctx, key, "new"); err != nil {
				return false, err
			}
			say("wrote %s %d %d", key, t0, time.Now().UnixMilli())
		}
		say("done")
	case "take-setup":
		b, err := kv.OpenBucket[string](store, "race-take")
		if err != nil {
			return false, err
		}
		for r := range num(2) {
			if err := b.Set(ctx, fmt.Sprintf("r%d", r), "prize"); err != nil {
				return false, err
			}
		}
		say("ready")
	case "take-rounds":
		b, err := kv.OpenBucket[string](store, "race-take")
		if err != nil {
			return false, err
		}
		startLine()
		for r := range num(2) {
			_, found, err := b.Take(ctx, fmt.Sprintf("r%d", r))
			if err != nil {
				return false, err
			}
			if found {
				say("won %d", r)
			}
		}
	case "once-run", "once-hang":
		once, err := kv.OpenOnce[string](store, "race-once", kv.Keep(24*time.Hour))
		if err != nil {
			return false, err
		}
		hold := time.Duration(num(3)) * time.Millisecond
		got, err := once.Run(ctx, arg(2), func(context.Context) (string, error) {
			if cmd == "once-hang" {
				say("running")
				for {
					time.Sleep(time.Hour) // until the driver kills the process
				}
			}
			say("ran")
			time.Sleep(hold)
			return arg(4), nil
		})
		if err != nil {
			return false, err
		}
		say("answer %s", got)
	case "quota-allows":
		q, err := kv.OpenQuota(store, "race-quota", kv.Window("daily", 10, 24*time.Hour))
		if err == nil {
			err = sayPassed(num(2), func(int) (kv.Allowance, error) { return q.Allow(ctx, "u") })
		}
		if err != nil {
			return false, err
		}
	case "counter-adds":
		c, err := kv.OpenCounters(store, "race-counter")
		if err == nil {
			err = addOnes(c, num(2))
		}
		if err != nil {
			return false, err
		}
	case "counter-get":
		c, err := kv.OpenCounters(store, "race-counter")
		if err != nil {
			return false, err
		}
		v, err := c.Get(ctx, "k")
		if err != nil {
			return false, err
		}
		say("value %d", v)
	default:
		fmt.Fprintf(os.Stderr, "tinystore-agent: unknown command %q\n", cmd)
		return false, nil
	}
	return true, nil
}

func main() {
	ok, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tinystore-agent: "+strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// startLine waits for the start time cross.py gives every racer
// (CROSS_START_AT_MS), so that agents of slow-starting languages race too.
func startLine() {
	if at, err := strconv.ParseInt(os.Getenv("CROSS_START_AT_MS"), 10, 64); err == nil {
		time.Sleep(time.Until(time.UnixMilli(at)))
	}
}
