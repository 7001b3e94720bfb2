package main

// The limits commands of the Go agent: rate limits and flush_every counters
// shared by every process (tests/processes/README.md, "Limits").

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// limitsCommand runs a limits command; handled is false when cmd is not one.
func limitsCommand(store *tinystore.Store, cmd string, arg func(int) string, num func(int) int) (handled bool, err error) {
	switch cmd {
	case "rate-race":
		rl, err := kv.OpenRateLimit(store, "race-rate", kv.Rate(20, time.Second), kv.Burst(10))
		if err != nil {
			return true, err
		}
		startLine()
		start, first, passed := time.Now(), time.Now().UnixMilli(), 0
		for time.Since(start) < time.Duration(num(2))*time.Millisecond {
			a, err := rl.Allow(ctx, "hot")
			if err != nil {
				return true, err
			}
			if a.OK {
				passed++
			}
		}
		say("passed %d from %d to %d", passed, first, time.Now().UnixMilli())
	case "rate-spread":
		rl, err := kv.OpenRateLimit(store, "race-once-per-key", kv.Rate(1, time.Hour))
		if err == nil {
			err = sayPassed(num(3), func(i int) (kv.Allowance, error) { return rl.Allow(ctx, fmt.Sprintf("%s%d", arg(2), i)) })
		}
		if err != nil {
			return true, err
		}
	case "fcounter-adds":
		c, err := raceFcounter(store)
		if err == nil {
			err = addOnes(c, num(2))
		}
		if err != nil {
			return true, err
		}
	case "fcounter-get":
		c, err := raceFcounter(store)
		if err != nil {
			return true, err
		}
		v, err := c.Get(ctx, arg(2))
		if err != nil {
			return true, err
		}
		say("value %d", v)
	case "fcounter-forever":
		c, err := raceFcounter(store)
		if err != nil {
			return true, err
		}
		for n := 1; ; n++ {
			if _, err := c.Add(ctx, "k", 1); err != nil {
				return true, err
			}
			say("added %d", n)
		}
	case "limits-shell":
		return true, limitsShell(store)
	default:
		return false, nil
	}
	return true, nil
}

func raceFcounter(store *tinystore.Store) (*kv.Counters, error) {
	return kv.OpenCounters(store, "race-fcounter", kv.FlushEvery(time.Second))
}

// sayPassed makes n requests, the i-th by allow, after the start line,
// then says how many passed: the racing requests of a limit test.
func sayPassed(n int, allow func(i int) (kv.Allowance, error)) error {
	startLine()
	passed := 0
	for i := range n {
		a, err := allow(i)
		if err != nil {
			return err
		}
		if a.OK {
			passed++
		}
	}
	say("passed %d", passed)
	return nil
}

// addOnes adds 1 to the counter "k" of c n times, after the start line,
// then says done: the racing adds of a counter test.
func addOnes(c *kv.Counters, n int) error {
	startLine()
	for range n {
		if _, err := c.Add(ctx, "k", 1); err != nil {
			return err
		}
	}
	say("done")
	return nil
}

// limitsShell answers one command a line from standard input until it ends
// or says quit. Its limit lets 10 through at once and one more an hour, so
// that a test's own pace refills nothing.
func limitsShell(store *tinystore.Store) error {
	rl, err := kv.OpenRateLimit(store, "race-shell", kv.Rate(1, time.Hour), kv.Burst(10))
	if err != nil {
		return err
	}
	c, err := raceFcounter(store)
	if err != nil {
		return err
	}
	say("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		w := strings.Fields(in.Text())
		switch {
		case len(w) == 2 && w[0] == "allow":
			a, err := rl.Allow(ctx, w[1])
			if err != nil {
				return err
			}
			if a.OK {
				say("ok")
			} else {
				say("refused")
			}
		case len(w) == 2 && w[0] == "peek":
			a, err := rl.Peek(ctx, w[1])
			if err != nil {
				return err
			}
			say("left %d", a.Left)
		case len(w) == 2 && w[0] == "reset":
			if err := rl.Reset(ctx, w[1]); err != nil {
				return err
			}
			say("reset")
		case len(w) == 3 && w[0] == "add":
			n, _ := strconv.ParseInt(w[2], 10, 64)
			v, err := c.Add(ctx, w[1], n)
			if err != nil {
				return err
			}
			say("value %d", v)
		case len(w) == 2 && w[0] == "get":
			v, err := c.Get(ctx, w[1])
			if err != nil {
				return err
			}
			say("value %d", v)
		case len(w) == 1 && w[0] == "quit":
			return nil
		default:
			say("unknown %q", in.Text())
		}
	}
	return in.Err()
}
