package conformance_test

// The calls of a case on each kind of handle, outside a transaction or inside one.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/internal/cases"
	"tinyshed.org/tinystore/kv"
)

// call runs one call; tx, when not nil, routes the call through it.
func (r *runner) call(s step, tx *kv.Tx, index int) (out, error) {
	op := text(s, "op")
	var key any
	if k, ok := s["key"]; ok {
		key = cases.Key(k)
		if t, ok := key.(string); ok {
			key = strings.ReplaceAll(t, "{i}", strconv.Itoa(index))
		}
	}
	n := int64(1)
	if v, ok := s["n"]; ok {
		n = cases.Int(v)
	}
	var opts []kv.CallOption
	if v, ok := s["if_version"]; ok {
		saved, err := r.version(v)
		if err != nil {
			return out{}, err
		}
		opts = append(opts, kv.IfVersion(saved))
	}
	if d, ok, err := duration(s, "ttl"); err != nil {
		return out{}, err
	} else if ok {
		opts = append(opts, kv.TTL(d))
	}
	if outside, _ := s["outside"].(bool); outside || op == "run" {
		// A step marked outside uses the handle itself, from inside the
		// transaction; a run of once too (inside one it is refused).
		tx = nil
	}
	// Every kind joins the transaction; what cannot answers its refusal.
	h := r.handle(s, tx)
	switch {
	case h.bucket != nil:
		b := h.bucket
		if tx != nil {
			b = b.WithTx(tx)
		}
		switch op {
		case "set":
			if e, ok := option(s, "expires_in"); ok {
				back, neg := strings.CutPrefix(e.(string), "-")
				d, err := tinystore.ParseDuration(back)
				if err != nil {
					return out{}, err
				}
				if neg {
					d = -d
				}
				opts = append(opts, kv.ExpireAt(r.store.Now().Add(d)))
			}
			v, err := b.Set(ctx, key, s["value"], opts...)
			return out{kind: outJSON, json: json.Number(v.String()), version: v}, err
		case "get":
			v, found, err := b.Get(ctx, key)
			return out{kind: outValue, value: v, found: found}, err
		case "has":
			found, err := b.Has(ctx, key)
			return out{kind: outJSON, json: found}, err
		case "entry":
			v, version, expiresAt, found, err := b.Entry(ctx, key)
			if err != nil || !found {
				return out{kind: outJSON}, err
			}
			return r.entryOut(v, version, expiresAt), nil
		case "create":
			written, err := b.Create(ctx, key, s["value"], opts...)
			return out{kind: outJSON, json: written}, err
		case "create_entry":
			v, version, expiresAt, written, err := b.CreateEntry(ctx, key, s["value"], opts...)
			if err != nil {
				return out{}, err
			}
			o := r.entryOut(v, version, expiresAt)
			o.written = &written
			return o, nil
		case "take":
			v, found, err := b.Take(ctx, key, opts...)
			return out{kind: outValue, value: v, found: found}, err
		case "delete":
			found, err := b.Delete(ctx, key, opts...)
			return out{kind: outJSON, json: found}, err
		case "expire":
			found, err := b.Expire(ctx, key, opts...)
			return out{kind: outJSON, json: found}, err
		case "clear":
			return out{}, b.Clear(ctx)
		case "list":
			var lo kv.ListOptions
			if a, ok := s["after"]; ok {
				lo.After = cases.Text(a)
			}
			if l, ok := s["limit"]; ok {
				// In Go a Limit of 0 is the default page; -1 asks for a
				// page of no keys, as a case's 0 does.
				if lo.Limit = int(cases.Int(l)); lo.Limit == 0 {
					lo.Limit = -1
				}
			}
			keys, next, err := b.List(ctx, lo)
			var nextKey any
			if next != "" {
				nextKey = next
			}
			return out{kind: outJSON, json: map[string]any{"keys": keyList(keys), "next": nextKey}}, err
		case "all":
			keys, err := b.All(ctx)
			return out{kind: outJSON, json: map[string]any{"keys": keyList(keys), "count": number(int64(len(keys)))}}, err
		}
	case h.counters != nil:
		c := h.counters
		switch op {
		case "add":
			v, err := c.Add(ctx, key, n)
			return out{kind: outJSON, json: number(v)}, err
		case "max":
			v, err := c.Max(ctx, key, n)
			return out{kind: outJSON, json: number(v)}, err
		case "get":
			v, err := c.Get(ctx, key)
			return out{kind: outJSON, json: number(v)}, err
		case "delete":
			_, err := c.Delete(ctx, key)
			return out{}, err
		}
	case h.rate != nil || h.quota != nil:
		var l limiter = h.rate
		if h.quota != nil {
			l = h.quota
		}
		switch op {
		case "allow":
			a, err := l.AllowN(ctx, key, int(n))
			return out{kind: outAllow, allow: a}, err
		case "peek":
			a, err := l.Peek(ctx, key)
			return out{kind: outAllow, allow: a}, err
		case "refund":
			if h.quota == nil {
				break
			}
			if err := h.quota.RefundN(ctx, key, int(n)); err != nil {
				return out{}, err
			}
			a, err := h.quota.Peek(ctx, key)
			return out{kind: outAllow, allow: a}, err
		case "reset":
			return out{}, l.Reset(ctx, key)
		}
	case h.once != nil:
		switch op {
		case "run":
			runCtx := ctx
			if r.inside != nil {
				runCtx = r.inside
			}
			v, err := h.once.Run(runCtx, key, func(fnCtx context.Context) (any, error) {
				r.ran.Add(1)
				// Steps of the run's own function, inside the run (with its ctx).
				if inner, ok := s["inside"].([]any); ok {
					outer := r.inside
					r.inside = fnCtx
					defer func() { r.inside = outer }()
					for _, x := range inner {
						in := x.(map[string]any)
						o, err := r.call(in, nil, 0)
						if c := r.check(in, o, err); c != nil {
							return nil, fmt.Errorf("inside the run, %s: %w", text(in, "op"), c)
						}
					}
				}
				if msg, ok := s["fails"]; ok {
					return nil, &failed{msg.(string)}
				}
				return s["returns"], nil
			})
			return out{kind: outValue, value: v, found: err == nil}, err
		case "get":
			v, found, err := h.once.Get(ctx, key)
			return out{kind: outValue, value: v, found: found}, err
		case "delete":
			found, err := h.once.Delete(ctx, key)
			return out{kind: outJSON, json: found}, err
		}
	}
	panic(unknown{"the Go runner does not know the call " + strconv.Quote(op) + " on the handle " + text(s, "on")})
}

// entryOut is an entry's answer, its expiry as ms from the store's now.
// version is a saved version by its name, or {"text": ...}: text as a
// caller gives it, read by UnmarshalText.
func (r *runner) version(v any) (kv.Version, error) {
	if o, ok := v.(map[string]any); ok {
		var given kv.Version
		return given, given.UnmarshalText([]byte(o["text"].(string)))
	}
	saved, ok := r.versions[v.(string)]
	if !ok {
		panic(unknown{"no version was saved as " + v.(string)})
	}
	return saved, nil
}

func (r *runner) entryOut(v cases.Value, version kv.Version, expiresAt time.Time) out {
	o := out{kind: outEntry, value: v, version: version}
	if !expiresAt.IsZero() {
		ms := expiresAt.Sub(r.store.Now()).Milliseconds()
		o.expires = &ms
	}
	return o
}

// limiter is what a rate limit and a quota both answer.
type limiter interface {
	AllowN(ctx context.Context, key any, n int) (kv.Allowance, error)
	Peek(ctx context.Context, key any) (kv.Allowance, error)
	Reset(ctx context.Context, key any) error
}
