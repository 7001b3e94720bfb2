// Command chat is the example chat (sign-in codes, sessions and limits),
// in Go, on a local store.
//
//	go run . data
//
// signs a user in with a one-time code, keeps them signed in, limits their
// guesses and messages, and answers a request sent twice only once,
// printing what happens. It runs on the same store as the Rust example
// (make demo), with the same handles; its messages table is a file of JSON
// lines beside kv.db, since the Go module needs no SQLite driver of its own.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// Session is what a session token's digest finds.
type Session struct {
	UserID int64  `json:"userId"`
	Device string `json:"device"`
}

// Sent is the answer once keeps for a request: the id of the saved message.
type Sent struct {
	ID int64 `json:"id"`
}

// Response is what the chat answers a request.
type Response struct {
	Status  int
	Cookie  string
	RetryAt time.Time
}

// User is a user of the chat.
type User struct{ ID int64 }

var (
	codes    *kv.Bucket[int64]
	sessions *kv.Bucket[Session]
	guesses  *kv.RateLimit
	messages *kv.Quota
	sends    *kv.Once[Sent]

	db     *messagesTable
	mailer = &printingMailer{}
	user   User // the one user of this run
)

func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// openEverything opens every handle the chat uses.
func openEverything(store *tinystore.Store) (err error) {
	open := func(e error) {
		if err == nil {
			err = e
		}
	}
	var e error
	codes, e = kv.OpenBucket[int64](store, "sign-in-codes", kv.TTL(15*time.Minute))
	open(e)
	sessions, e = kv.OpenBucket[Session](store, "sessions", kv.Idle(30*24*time.Hour))
	open(e)
	guesses, e = kv.OpenRateLimit(store, "sign-in-guesses", kv.Rate(5, time.Minute), kv.Burst(5))
	open(e)
	messages, e = kv.OpenQuota(store, "messages",
		kv.Window("session", 100, 5*time.Hour), kv.Window("weekly", 300, 7*24*time.Hour))
	open(e)
	sends, e = kv.OpenOnce[Sent](store, "sends", kv.Keep(24*time.Hour))
	open(e)
	return err
}

// printingMailer prints a mail instead of sending it, and keeps the last
// one for the user to read.
type printingMailer struct{ last string }

func (m *printingMailer) Send(ctx context.Context, to, body string) error {
	fmt.Printf("  [mail to %s] %s\n", to, body)
	m.last = body
	return nil
}

func findOrCreateUser(ctx context.Context, email string) (User, error) { return user, nil }

// --- Sign in with a code ---

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

// --- Sessions ---

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

// --- Requests sent twice ---

// message is a row of the chat's messages table.
type message struct {
	ID        int64  `json:"id"`
	ChatID    int64  `json:"chat_id"`
	Role      string `json:"role"`
	Text      string `json:"text"`
	CreatedAt int64  `json:"created_at"`
}

// messagesTable is the chat's messages table, one JSON line a row, in a
// file of its own: the database that once writes into.
type messagesTable struct{ path string }

func (t *messagesTable) rows() ([]message, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []message
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var m message
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", t.path, err)
		}
		out = append(out, m)
	}
	return out, lines.Err()
}

// insert appends a row and answers its id, as an insert's last_insert_rowid.
func (t *messagesTable) insert(ctx context.Context, m message) (int64, error) {
	rows, err := t.rows()
	if err != nil {
		return 0, err
	}
	m.ID = int64(len(rows)) + 1
	line, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(t.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return 0, err
	}
	return m.ID, f.Close()
}

func saveMessage(ctx context.Context, idempotencyKey string, chatID int64, text string) (Sent, error) {
	return sends.Run(ctx, idempotencyKey, func(ctx context.Context) (Sent, error) {
		id, err := db.insert(ctx, message{ChatID: chatID, Role: "user", Text: text, CreatedAt: time.Now().UnixMilli()})
		return Sent{ID: id}, err
	})
}

// --- the story ---

// show is a user id found, as the other examples print it.
func show(userID int64, found bool) string {
	if !found {
		return "none"
	}
	return strconv.FormatInt(userID, 10)
}

func run(ctx context.Context, dir string) error {
	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := openEverything(store); err != nil {
		return err
	}
	db = &messagesTable{path: filepath.Join(dir, "chat-go.jsonl")}
	// Apart from the Rust example's users and addresses, so that both run
	// on one store and tell the same story.
	user = User{ID: 10000 + mathrand.Int64N(90000)}
	ip := fmt.Sprintf("198.51.100.%d", 1+mathrand.IntN(250))
	fmt.Printf("Go chat on %s, user %d from %s\n", filepath.Join(dir, "kv.db"), user.ID, ip)

	fmt.Println("\n1. Sign in with a code")
	if err := sendCode(ctx, "ada@example.com"); err != nil {
		return err
	}
	code := strings.TrimPrefix(mailer.last, "Your code is ") // as the user reads it
	if r, err := checkCode(ctx, ip, "000000"); err != nil {
		return err
	} else if r.Status == 401 {
		fmt.Println("  a wrong code is refused (401)")
	} else {
		fmt.Println("  unexpected: a wrong code passed")
	}
	r, err := checkCode(ctx, ip, code)
	if err != nil {
		return err
	}
	if r.Status != 200 {
		return fmt.Errorf("the right code was refused (%d)", r.Status)
	}
	cookie := r.Cookie
	fmt.Printf("  the right code signs in; cookie %s…\n", cookie[:12])
	if r, err := checkCode(ctx, ip, code); err != nil {
		return err
	} else if r.Status == 401 {
		fmt.Println("  the same code again is refused: take lets a code work once")
	} else {
		fmt.Println("  unexpected: a used code passed")
	}
	for n := 4; n <= 6; n++ {
		r, err := checkCode(ctx, ip, "123456")
		if err != nil {
			return err
		}
		if r.Status == 429 {
			fmt.Printf("  guess %d in a minute from %s is refused: retry in %.0fs\n", n, ip, math.Ceil(time.Until(r.RetryAt).Seconds()))
		} else {
			fmt.Printf("  guess %d in a minute: wrong code\n", n)
		}
	}

	fmt.Println("\n2. Sessions")
	id, found, err := currentUser(ctx, cookie)
	if err != nil {
		return err
	}
	fmt.Printf("  current user from the cookie: %s (the read renews the 30 days)\n", show(id, found))
	phone, err := startSession(ctx, user.ID)
	if err != nil {
		return err
	}
	_, token, _ := strings.Cut(cookie, ".")
	if _, err := sessions.Under(user.ID).Delete(ctx, digest(token)); err != nil { // sign out here
		return err
	}
	webID, webIn, err := currentUser(ctx, cookie)
	if err != nil {
		return err
	}
	phoneID, phoneIn, err := currentUser(ctx, phone.Cookie)
	if err != nil {
		return err
	}
	fmt.Printf("  signed out here: web session -> %s, phone session -> %s\n", show(webID, webIn), show(phoneID, phoneIn))
	if err := sessions.Under(user.ID).Clear(ctx); err != nil { // sign out everywhere
		return err
	}
	phoneID, phoneIn, err = currentUser(ctx, phone.Cookie)
	if err != nil {
		return err
	}
	fmt.Printf("  signed out everywhere: phone session -> %s\n", show(phoneID, phoneIn))

	fmt.Println("\n3. Limits per plan (100 messages per 5 hours, 300 per week)")
	key := strconv.FormatInt(user.ID, 10)
	var used kv.Allowance
	for range 100 {
		if used, err = messages.Allow(ctx, key); err != nil {
			return err
		}
	}
	fmt.Printf("  100 messages pass; weekly left: %d\n", used.Windows["weekly"].Left)
	refused, err := messages.Allow(ctx, key)
	if err != nil {
		return err
	}
	fmt.Printf("  message 101 is refused (ok=%v): the 5-hour window resets in %.0fm; the weekly window still has %d left\n",
		refused.OK, time.Until(refused.Windows["session"].ResetsAt).Minutes(), refused.Windows["weekly"].Left)
	if err := messages.Refund(ctx, key); err != nil {
		return err
	}
	left, err := messages.Peek(ctx, key)
	if err != nil {
		return err
	}
	fmt.Printf("  the model failed once: refund gives a use back (left now %d)\n", left.Left)

	fmt.Println("\n4. Requests sent twice")
	idempotencyKey := fmt.Sprintf("k7q2-go-%d", user.ID)
	first, err := saveMessage(ctx, idempotencyKey, 1, "hello")
	if err != nil {
		return err
	}
	retry, err := saveMessage(ctx, idempotencyKey, 1, "hello")
	if err != nil {
		return err
	}
	rows, err := db.rows()
	if err != nil {
		return err
	}
	saved := 0
	for _, m := range rows {
		if m.Text == "hello" && m.ID == first.ID {
			saved++
		}
	}
	fmt.Printf("  first request saved message %d; the retry got message %d (%d row in %s)\n",
		first.ID, retry.ID, saved, filepath.Base(db.path))
	if err := store.Close(); err != nil {
		return err
	}
	fmt.Println("\nGo chat: done.")
	return nil
}

func main() {
	dir := "data"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, "Go chat:", err)
		os.Exit(1)
	}
}
