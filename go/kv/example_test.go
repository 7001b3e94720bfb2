package kv_test

// The example chat's steps (sign-in codes, sessions, limits per plan,
// requests sent twice), a quota's refund, rows as they are kept, a codec
// and a config, as runnable examples that `go doc` shows, around a fake
// user table, mailer and chat database.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
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

// The handles of "Open everything", opened by openEverything.
var (
	codes    *kv.Bucket[int64]
	sessions *kv.Bucket[Session]
	guesses  *kv.RateLimit
	messages *kv.Quota
	sends    *kv.Once[Sent]
)

func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// --- the chat around the examples ---

type User struct{ ID int64 }

func findOrCreateUser(ctx context.Context, email string) (User, error) { return User{ID: 7}, nil }

type outbox struct{ last string }

func (o *outbox) Send(ctx context.Context, to, text string) error {
	o.last = text
	return nil
}

var mailer = &outbox{}

type Response struct {
	Status  int
	RetryAt time.Time
	Cookie  string
}

type chatDB struct{ rows int64 }

type execResult struct{ LastInsertRowid int64 }

func (d *chatDB) Exec(ctx context.Context, query string, args ...any) (execResult, error) {
	d.rows++
	return execResult{LastInsertRowid: d.rows}, nil
}

var db = &chatDB{rows: 40}

var errTooMany = fmt.Errorf("429")

func tooMany(retryAt time.Time, left int64) error {
	return fmt.Errorf("%w: retry at %s, %d left this week", errTooMany, retryAt.UTC().Format(time.Kitchen), left)
}

// exampleApp is an exampleStore with the handles of "Open everything"
// open, and the context of the example's calls.
func exampleApp() (ctx context.Context, store *tinystore.Store, now *time.Time, stop func()) {
	store, now, stop = exampleStore()
	if err := openEverything(store); err != nil {
		panic(err)
	}
	return context.Background(), store, now, stop
}

// exampleStore opens a Manual store on 2026-10-20 09:00 UTC in a new
// directory; stop closes and removes it.
func exampleStore() (store *tinystore.Store, now *time.Time, stop func()) {
	dir, err := os.MkdirTemp("", "tinystore-example")
	if err != nil {
		panic(err)
	}
	clock := time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)
	store, err = tinystore.Open(context.Background(), dir, tinystore.Options{Manual: true, Clock: func() time.Time { return clock }})
	if err != nil {
		panic(err)
	}
	return store, &clock, func() {
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}
}

func openEverything(store *tinystore.Store) (err error) {
	if codes, err = kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute)); err != nil {
		return err
	}
	if sessions, err = kv.OpenBucket[Session](store, "sessions", kv.Idle(30*24*time.Hour)); err != nil {
		return err
	}
	if guesses, err = kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5)); err != nil {
		return err
	}
	if messages, err = kv.OpenQuota(store, "messages",
		kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour)); err != nil {
		return err
	}
	sends, err = kv.OpenOnce[Sent](store, "sends", kv.Keep(24*time.Hour))
	return err
}

// Open every handle the chat uses.
func Example_openEverything() {
	store, _, stop := exampleStore()
	defer stop()

	// errors left out
	codes, err := kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
	sessions, err := kv.OpenBucket[Session](store, "sessions", kv.Idle(30*24*time.Hour))
	guesses, err := kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5))
	messages, err := kv.OpenQuota(store, "messages",
		kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour))
	sends, err := kv.OpenOnce[Sent](store, "sends", kv.Keep(24*time.Hour))

	fmt.Println(codes.Name(), sessions.Name(), guesses.Name(), messages.Name(), sends.Name(), err)
	// Output: sign-in-codes sessions sign-in-guesses messages sends <nil>
}

// --- "Sign in with a code" ---

func sendCode(ctx context.Context, email string) error {
	user, err := findOrCreateUser(ctx, email)
	if err != nil {
		return err
	}
	code := fmt.Sprintf("%06d", 100000+mathrand.IntN(900000))
	if err := codes.Set(ctx, digest(code), user.ID); err != nil {
		return err
	}
	return mailer.Send(ctx, email, "Your code is "+code)
}

func checkCode(ctx context.Context, ip, code string) (Response, error) {
	guess, err := guesses.Allow(ctx, ip)
	if err != nil {
		return Response{}, err
	}
	if !guess.OK {
		return Response{Status: 429, RetryAt: guess.RetryAt}, nil
	}
	userID, found, err := codes.Take(ctx, digest(code)) // found is false if wrong, used or expired
	if err != nil || !found {
		return Response{Status: 401}, err
	}
	return startSession(ctx, userID)
}

// Sign in with a code: a code works once, and guesses are
// limited to 5 a minute per IP address.
func Example_signInWithACode() {
	ctx, _, now, stop := exampleApp()
	defer stop()

	_ = sendCode(ctx, "ada@example.com")
	code := strings.TrimPrefix(mailer.last, "Your code is ")
	first, _ := checkCode(ctx, "10.0.0.1", code)
	again, _ := checkCode(ctx, "10.0.0.1", code)
	fmt.Println("the code:", first.Status, "then", again.Status)

	for range 3 {
		_, _ = checkCode(ctx, "10.0.0.1", "000000")
	}
	r, _ := checkCode(ctx, "10.0.0.1", "000000")
	fmt.Println("the sixth guess:", r.Status, "retry in", r.RetryAt.Sub(*now))

	_ = sendCode(ctx, "ada@example.com")
	*now = now.Add(16 * time.Minute)
	late, _ := checkCode(ctx, "10.0.0.2", strings.TrimPrefix(mailer.last, "Your code is "))
	fmt.Println("a code 16 minutes old:", late.Status)
	// Output:
	// the code: 200 then 401
	// the sixth guess: 429 retry in 12s
	// a code 16 minutes old: 401
}

// --- "Sessions" ---

func startSession(ctx context.Context, userID int64) (Response, error) {
	token := rand.Text()
	err := sessions.Under(userID).Set(ctx, digest(token), Session{UserID: userID, Device: "web"})
	return Response{Status: 200, Cookie: fmt.Sprint(userID, ".", token)}, err
}

func currentUser(ctx context.Context, cookie string) (int64, bool, error) {
	userID, token, _ := strings.Cut(cookie, ".")
	session, found, err := sessions.Under(userID).Get(ctx, digest(token)) // renews the 30 days
	return session.UserID, found, err
}

// Sessions: a month while active, signed out here or
// everywhere.
func Example_sessions() {
	ctx, store, now, stop := exampleApp()
	defer stop()

	web, _ := startSession(ctx, 7)
	for range 3 { // active every 20 days: never signed out
		*now = now.Add(20 * 24 * time.Hour)
		userID, found, _ := currentUser(ctx, web.Cookie)
		_, _ = store.Maintain(ctx) // a Manual store writes renewals when the test says
		fmt.Println("user", userID, "signed in:", found)
	}

	var userID int64 = 7
	phone, _ := startSession(ctx, 7)
	_, token, _ := strings.Cut(web.Cookie, ".")
	_, err := sessions.Under(userID).Delete(ctx, digest(token)) // sign out here
	_, webIn, _ := currentUser(ctx, web.Cookie)
	_, phoneIn, _ := currentUser(ctx, phone.Cookie)
	fmt.Println("after signing out on the web: web", webIn, "phone", phoneIn, err)

	err = sessions.Under(userID).Clear(ctx) // sign out everywhere
	_, phoneIn, _ = currentUser(ctx, phone.Cookie)
	fmt.Println("after signing out everywhere: phone", phoneIn, err)

	*now = now.Add(31 * 24 * time.Hour)
	idle, _ := startSession(ctx, 8)
	*now = now.Add(31 * 24 * time.Hour)
	_, idleIn, _ := currentUser(ctx, idle.Cookie)
	fmt.Println("after a month away:", idleIn)
	// Output:
	// user 7 signed in: true
	// user 7 signed in: true
	// user 7 signed in: true
	// after signing out on the web: web false phone true <nil>
	// after signing out everywhere: phone false <nil>
	// after a month away: false
}

// --- "Limits per plan" ---

func sendMessage(ctx context.Context, userID int64) error {
	used, err := messages.Allow(ctx, strconv.FormatInt(userID, 10))
	if err != nil {
		return err
	}
	if !used.OK {
		return tooMany(used.RetryAt, used.Windows["weekly"].Left)
	}
	return nil
}

// Limits per plan: 100 messages per 5 hours, 300 a week.
func Example_limitsPerPlan() {
	ctx, _, now, stop := exampleApp()
	defer stop()

	sent := 0
	for range 101 {
		if err := sendMessage(ctx, 7); err != nil {
			fmt.Println("message", sent+1, "refused:", err)
			break
		}
		sent++
	}
	*now = now.Add(5 * time.Hour)
	fmt.Println("five hours later:", sendMessage(ctx, 7))
	// Output:
	// message 101 refused: 429: retry at 2:00PM, 200 left this week
	// five hours later: <nil>
}

// --- "Requests sent twice" ---

// Requests sent twice: the retry gets the first answer,
// and the message is saved once.
func Example_requestsSentTwice() {
	ctx, _, _, stop := exampleApp()
	defer stop()
	chatID, text := int64(3), "hello"

	send := func(r *http.Request) (Sent, error) {
		sent, err := sends.Run(ctx, r.Header.Get("Idempotency-Key"), func(ctx context.Context) (Sent, error) {
			done, err := db.Exec(ctx, `insert into messages (chat_id, role, text, created_at) values (?, 'user', ?, ?)`,
				chatID, text, time.Now().UnixMilli())
			return Sent{ID: done.LastInsertRowid}, err
		})
		return sent, err
	}
	r, _ := http.NewRequest("POST", "/messages", nil)
	r.Header.Set("Idempotency-Key", "k7q2")
	first, _ := send(r)
	retry, _ := send(r)
	fmt.Println("first", first.ID, "retry", retry.ID, "rows", db.rows)
	// Output: first 41 retry 41 rows 41
}

// --- a quota ---

// A quota: a use counted in both windows, given back when the
// model failed.
func ExampleQuota_Refund() {
	store, _, stop := exampleStore()
	defer stop()
	ctx := context.Background()
	userID := int64(7)
	tooMany := func(retryAt time.Time, weekly kv.WindowUsage) error {
		return fmt.Errorf("429 until %s; weekly: %+v", retryAt, weekly)
	}
	guide := func() error {
		messages, err := kv.OpenQuota(store, "messages",
			kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour))

		used, err := messages.Allow(ctx, strconv.FormatInt(userID, 10))
		if err == nil && !used.OK {
			return tooMany(used.RetryAt, used.Windows["weekly"])
		}
		err = messages.Refund(ctx, strconv.FormatInt(userID, 10)) // the model failed: give the use back

		left, _ := messages.Peek(ctx, userID)
		fmt.Println("ok:", used.OK, "used this week after the refund:", left.Windows["weekly"].Used)
		return err
	}
	fmt.Println(guide())
	// Output:
	// ok: true used this week after the refund: 0
	// <nil>
}

// --- a claim ---

// A webhook's event handled once however often it arrives: CreateEntry
// claims the event for ten minutes and answers the claim's entry, and the
// Set that records it done applies only while the claim is still this
// caller's (IfVersion).
func ExampleBucket_CreateEntry() {
	store, _, stop := exampleStore()
	defer stop()
	ctx := context.Background()
	seen, err := kv.OpenBucket[string](store, "stripe-events")
	if err != nil {
		panic(err)
	}
	claim, first, err := seen.CreateEntry(ctx, "evt_1", "handling", kv.TTL(10*time.Minute))
	again, second, err := seen.CreateEntry(ctx, "evt_1", "handling") // a retry of the same event
	fmt.Println(first, second, again.Version == claim.Version, claim.ExpiresAt.Format(time.Kitchen))

	done, err := seen.SetVersion(ctx, "evt_1", "done", kv.IfVersion(claim.Version), kv.TTL(7*24*time.Hour))
	entry, _, err := seen.Entry(ctx, "evt_1")
	fmt.Println(entry.Value, entry.Version == done)

	err = seen.Set(ctx, "evt_1", "late", kv.IfVersion(claim.Version))
	fmt.Println(errors.Is(err, tinystore.ErrConflict))
	// Output:
	// true false true 9:10AM
	// done true
	// true
}

// --- Rows as they are kept, a codec of a bucket's own, config ---

// A bucket of kv.Raw reads any bucket as its rows keep it, whatever type
// (or language) wrote it, and writes rows the typed bucket reads back.
func ExampleRaw() {
	store, _, stop := exampleStore()
	defer stop()
	ctx := context.Background()

	codes, _ := kv.OpenBucket[int64](store, "sign-in-codes")
	_ = codes.Set(ctx, "digest", 7)
	names, _ := kv.OpenBucket[string](store, "names")
	_ = names.Set(ctx, "nobody", "")

	rawCodes, _ := kv.OpenBucket[kv.Raw](store, "sign-in-codes")
	r, _, _ := rawCodes.Get(ctx, "digest")
	fmt.Println(r.Kind == kv.RawInt, r.Int)
	rawNames, _ := kv.OpenBucket[kv.Raw](store, "names")
	r, _, _ = rawNames.Get(ctx, "nobody")
	fmt.Println(r.Kind == kv.RawBytes, len(r.Bytes)) // an empty string is empty bytes

	_ = rawCodes.Set(ctx, "other", kv.Raw{Kind: kv.RawInt, Int: 8})
	id, _, _ := codes.Get(ctx, "other")
	fmt.Println(id)
	// Output:
	// true 7
	// true 0
	// 8
}

// upperText keeps a string upper-cased: a codec of two methods.
type upperText struct{}

func (upperText) Encode(v any) ([]byte, error) { return []byte(strings.ToUpper(v.(string))), nil }

func (upperText) Decode(data []byte, into any) error {
	*into.(*string) = strings.ToLower(string(data))
	return nil
}

// WithCodec gives a bucket its own encoding in place of the choice by type.
func ExampleWithCodec() {
	store, _, stop := exampleStore()
	defer stop()
	ctx := context.Background()

	shouts, _ := kv.OpenBucket[string](store, "shouts", kv.WithCodec(upperText{}))
	_ = shouts.Set(ctx, "a", "hello")
	v, _, _ := shouts.Get(ctx, "a")
	raw, _ := kv.OpenBucket[kv.Raw](store, "shouts")
	r, _, _ := raw.Get(ctx, "a")
	fmt.Println(v, string(r.Bytes))
	// Output: hello HELLO
}

// Settings from defaults, the environment and updates kept in kv.db.
func ExampleOpenConfig() {
	store, _, stop := exampleStore()
	defer stop()
	ctx := context.Background()

	type Settings struct {
		Port   int `json:"port"`
		Limits struct {
			RPS int `json:"rps"`
		} `json:"limits"`
		Token string `json:"token" secret:"true"`
	}
	settings, err := kv.OpenConfig[Settings](store, "app",
		kv.Defaults(map[string]any{"port": 8080, "limits": map[string]any{"rps": 100}}),
		kv.FromEnv("APP", ".env"), kv.EnvVars(map[string]string{"APP_LIMITS_RPS": "150", "APP_TOKEN": "s3cret"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(settings.Get().Port, settings.Get().Limits.RPS)
	if err := settings.Update(ctx, func(s *Settings) { s.Limits.RPS = 200 }); err != nil {
		panic(err)
	}
	fmt.Println(settings.Get().Limits.RPS)
	sources, _ := settings.Sources()
	for _, s := range sources {
		fmt.Println(s.Path, s.From)
	}
	// Output:
	// 8080 150
	// 200
	// port defaults
	// limits.rps kept
}
