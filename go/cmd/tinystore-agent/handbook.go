package main

// The handbook's handles ("Sessions and limits", and the quota guide),
// declared exactly as the chapter declares them in Go, for the commands of
// tests/interchange/handbook.md: hb-write writes what the chat writes,
// hb-read reads what another language's chat wrote, hb-take signs in with
// another language's code and signs its user out. The chapter leaves the
// errors out; here each one is checked as it comes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

type Session struct {
	UserID int64  `json:"userId"`
	Device string `json:"device"`
}

type Sent struct {
	ID int64 `json:"id"`
}

func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// chat holds the chapter's five handles.
type chat struct {
	codes    *kv.Bucket[int64]
	sessions *kv.Bucket[Session]
	guesses  *kv.RateLimit
	messages *kv.Quota
	sends    *kv.Once[Sent]
}

func openChat(store *tinystore.Store) (*chat, error) {
	codes, err := kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
	if err != nil {
		return nil, err
	}
	sessions, err := kv.OpenBucket[Session](store, "sessions", kv.Idle(30*24*time.Hour))
	if err != nil {
		return nil, err
	}
	guesses, err := kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5))
	if err != nil {
		return nil, err
	}
	messages, err := kv.OpenQuota(store, "messages",
		kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour))
	if err != nil {
		return nil, err
	}
	sends, err := kv.OpenOnce[Sent](store, "sends", kv.Keep(24*time.Hour))
	if err != nil {
		return nil, err
	}
	return &chat{codes, sessions, guesses, messages, sends}, nil
}

// checks counts what does not match, printing a line for each.
type checks struct {
	owner string
	bad   int
}

func (c *checks) check(what string, ok bool, got ...any) {
	if !ok {
		c.bad++
		say("MISMATCH %s %s: got %v", c.owner, what, got)
	}
}

func hbWrite(store *tinystore.Store, owner string, userID int64) (bool, error) {
	c, err := openChat(store)
	if err != nil {
		return false, err
	}
	if err := c.codes.Set(ctx, digest(owner+"-code"), userID); err != nil {
		return false, err
	}
	if err := c.codes.Set(ctx, digest(owner+"-code-to-take"), userID); err != nil {
		return false, err
	}
	err = c.sessions.Under(userID).Set(ctx, digest(owner+"-token"), Session{UserID: userID, Device: "web"})
	if err != nil {
		return false, err
	}
	for range 5 {
		if _, err := c.guesses.Allow(ctx, owner+"-ip"); err != nil {
			return false, err
		}
	}
	if _, err := c.messages.Allow(ctx, strconv.FormatInt(userID, 10)); err != nil {
		return false, err
	}
	_, err = c.sends.Run(ctx, owner+"-request", func(ctx context.Context) (Sent, error) {
		return Sent{ID: userID*10 + 1}, nil
	})
	if err != nil {
		return false, err
	}
	say("ok")
	return true, nil
}

func hbRead(store *tinystore.Store, owner string, userID int64) (bool, error) {
	c, err := openChat(store)
	if err != nil {
		return false, err
	}
	k := &checks{owner: owner}
	code, found, err := c.codes.Get(ctx, digest(owner+"-code"))
	k.check("sign-in-codes get", err == nil && found && code == userID, code, found, err)
	session, found, err := c.sessions.Under(userID).Get(ctx, digest(owner+"-token"))
	k.check("sessions get", err == nil && found && session == Session{UserID: userID, Device: "web"}, session, found, err)
	guess, err := c.guesses.Peek(ctx, owner+"-ip")
	k.check("sign-in-guesses peek", err == nil && guess.Left <= 3, guess, err)
	used, err := c.messages.Peek(ctx, strconv.FormatInt(userID, 10))
	session5h, weekly := used.Windows["session"], used.Windows["weekly"]
	k.check("messages peek", err == nil && used.OK && session5h.Used == 1 && session5h.Limit == 100 &&
		weekly.Used == 1 && weekly.Limit == 300, used, err)
	ran := false
	sent, err := c.sends.Run(ctx, owner+"-request", func(ctx context.Context) (Sent, error) {
		ran = true
		return Sent{ID: 0}, nil
	})
	k.check("sends run", err == nil && !ran && sent.ID == userID*10+1, ran, sent, err)
	if k.bad == 0 {
		say("ok 5")
	}
	return k.bad == 0, nil
}

func hbTake(store *tinystore.Store, owner string, userID int64) (bool, error) {
	c, err := openChat(store)
	if err != nil {
		return false, err
	}
	k := &checks{owner: owner}
	key := digest(owner + "-code-to-take")
	first, found, err := c.codes.Take(ctx, key)
	k.check("sign-in-codes take", err == nil && found && first == userID, first, found, err)
	_, found, err = c.codes.Take(ctx, key)
	k.check("sign-in-codes take again", err == nil && !found, found, err)
	if err := c.sessions.Under(userID).Clear(ctx); err != nil {
		return false, err
	}
	has, err := c.sessions.Under(userID).Has(ctx, digest(owner+"-token"))
	k.check("sessions clear", err == nil && !has, has, err)
	if k.bad == 0 {
		say("ok 3")
	}
	return k.bad == 0, nil
}

// userArg is a command's user id, or an error naming what it got.
func userArg(text string) (int64, error) {
	id, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("a user id, not %q", text)
	}
	return id, nil
}
