package kv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

type cfgLimits struct {
	RPS   int `json:"rps"`
	Burst int `json:"burst"`
}

type cfgSettings struct {
	Port    int            `json:"port"`
	Host    string         `json:"host"`
	Ratio   float64        `json:"ratio"`
	Debug   bool           `json:"debug"`
	Timeout time.Duration  `json:"timeout"`
	Hosts   []string       `json:"hosts"`
	Extra   map[string]any `json:"extra"`
	Limits  cfgLimits      `json:"limits"`
	Token   string         `json:"token" secret:"true"`
}

// Validate refuses a burst over the rate.
func (s *cfgSettings) Validate() error {
	if s.Limits.Burst > s.Limits.RPS {
		return fmt.Errorf("burst %d is over rps %d", s.Limits.Burst, s.Limits.RPS)
	}
	return nil
}

var cfgDefaults = cfgSettings{
	Port: 8080, Host: "localhost", Ratio: 0.5, Timeout: 30 * time.Second,
	Hosts: []string{}, Extra: map[string]any{}, Limits: cfgLimits{RPS: 100, Burst: 20}, Token: "dev-token",
}

// openStore opens an ordinary store (its config watcher runs) in a new directory.
func openStore(t *testing.T) (*tinystore.Store, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := tinystore.Open(context.Background(), dir, tinystore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store, dir
}

func openSettings(t *testing.T, store *tinystore.Store, opts ...kv.ConfigOption) *kv.Config[cfgSettings] {
	t.Helper()
	c, err := kv.OpenConfig[cfgSettings](store, "app", append([]kv.ConfigOption{kv.Defaults(cfgDefaults)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKV20LayersInOrder(t *testing.T) {
	ctx := context.Background()
	store, dir := openStore(t)
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("APP_LIMITS_RPS=150\nAPP_LIMITS_BURST=30\nAPP_HOST=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := openSettings(t, store,
		kv.Defaults(map[string]any{"port": 9000, "limits": map[string]any{"rps": 120}, "host": "from-map"}),
		kv.FromEnv("APP", envFile), kv.EnvVars(map[string]string{"APP_LIMITS_BURST": "40"}))
	s := c.Get()
	if s.Ratio != 0.5 || s.Port != 9000 || s.Host != "from-file" || s.Limits != (cfgLimits{RPS: 150, Burst: 40}) {
		t.Fatalf("layers: %+v", s)
	}
	if err := c.Update(ctx, func(s *cfgSettings) { s.Limits.Burst = 50 }); err != nil {
		t.Fatal(err)
	}
	if got := c.Get().Limits.Burst; got != 50 {
		t.Fatalf("a kept update is over every layer: %d", got)
	}
	sources, err := c.Sources()
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]kv.Source{}
	for _, s := range sources {
		from[s.Path] = s
	}
	if from["port"].From != "defaults" || from["host"].From != "env_file" || from["host"].Var != "APP_HOST" ||
		from["limits.burst"].From != "kept" {
		t.Fatalf("sources: %+v", sources)
	}
	if _, ok := from["token"]; ok {
		t.Fatal("sources list a secret field")
	}
}

func TestKV20EnvParsesEachType(t *testing.T) {
	store, _ := openStore(t)
	c := openSettings(t, store, kv.FromEnv("APP"), kv.EnvVars(map[string]string{
		"APP_PORT": "9090", "APP_HOST": "example.org", "APP_RATIO": "0.25", "APP_DEBUG": "true",
		"APP_TIMEOUT": "1h30m", "APP_HOSTS": "a.com,b.com", "APP_EXTRA": `{"k": [1, 2]}`,
	}))
	s := c.Get()
	want := cfgSettings{
		Port: 9090, Host: "example.org", Ratio: 0.25, Debug: true, Timeout: 90 * time.Minute,
		Hosts: []string{"a.com", "b.com"}, Extra: map[string]any{"k": []any{1.0, 2.0}},
		Limits: cfgDefaults.Limits, Token: "dev-token",
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

func TestKV20TheEnvironmentIsOneLayer(t *testing.T) {
	store, _ := openStore(t)
	_, err := kv.OpenConfig[cfgSettings](store, "twice", kv.FromEnv("APP"), kv.FromEnv("OTHER"),
		kv.EnvVars(map[string]string{}))
	says(t, err, tinystore.ErrInvalid, "the environment is one layer: give FromEnv once (bucket twice)")
}

func TestKV20BadVariableNamesItself(t *testing.T) {
	store, _ := openStore(t)
	for name, text := range map[string]string{
		"APP_PORT": "80x", "APP_DEBUG": "maybe", "APP_TIMEOUT": "90mins", "APP_EXTRA": "{no", "APP_RATIO": "half",
	} {
		_, err := kv.OpenConfig[cfgSettings](store, "app", kv.FromEnv("APP"), kv.EnvVars(map[string]string{name: text}))
		if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v", name, text, err)
		}
	}
}

type cfgDatabase struct {
	URL      string `json:"url" required:"true" env:"DATABASE_URL"`
	Password string `json:"password" secret:"true"`
	Pool     int    `json:"pool"`
}

func TestKV20SecretAndRequiredFields(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	_, err := kv.OpenConfig[cfgDatabase](store, "db", kv.FromEnv("APP"), kv.EnvVars(map[string]string{}))
	if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("a required field left empty: %v", err)
	}
	c, err := kv.OpenConfig[cfgDatabase](store, "db", kv.FromEnv("APP"),
		kv.EnvVars(map[string]string{"DATABASE_URL": "postgres://x", "APP_PASSWORD": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Get().Password != "s3cret" {
		t.Fatal("a secret comes from the environment")
	}
	if err := c.Update(ctx, func(d *cfgDatabase) { d.URL = "" }); !errors.Is(err, tinystore.ErrInvalid) ||
		!strings.Contains(err.Error(), "required") {
		t.Fatalf("emptying a required field: %v", err)
	}
	if err := c.Update(ctx, func(d *cfgDatabase) { d.Password = "other" }); !errors.Is(err, tinystore.ErrInvalid) ||
		!strings.Contains(err.Error(), "secret") {
		t.Fatalf("updating a secret field: %v", err)
	}
}

func TestKV20UpdateAndReset(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	c := openSettings(t, store)
	other := openSettings(t, store)
	if err := c.Update(ctx, func(s *cfgSettings) { s.Limits.RPS = 200; s.Timeout = 5 * time.Second }); err != nil {
		t.Fatal(err)
	}
	if got := other.Get(); got.Limits.RPS != 200 || got.Timeout != 5*time.Second {
		t.Fatalf("another handle sees it at once: %+v", got)
	}
	err := c.Update(ctx, func(s *cfgSettings) { s.Port = 1; s.Limits.Burst = 500 })
	var te *tinystore.Error
	if !errors.As(err, &te) || te.Kind != tinystore.ErrInvalid || te.Bucket != "app" ||
		te.Message != "the config refused the update: burst 500 is over rps 200" {
		t.Fatalf("Validate refuses, in the core's words, naming the config: %#v", err)
	}
	if c.Get().Port != 8080 {
		t.Fatal("a refused update wrote something")
	}
	err = c.Update(ctx, func(s *cfgSettings) { s.Host = strings.Repeat("x", 20_000) })
	if !errors.Is(err, tinystore.ErrLimit) {
		t.Fatalf("a value over 16 KiB: %v", err)
	}
	if err := c.Reset(ctx, "limits"); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(); got.Limits != cfgDefaults.Limits || got.Timeout != 5*time.Second {
		t.Fatalf("reset of a struct: %+v", got)
	}
	if err := c.Reset(ctx, "timeout"); err != nil {
		t.Fatal(err)
	}
	if got := other.Get(); !reflect.DeepEqual(got, cfgDefaults) {
		t.Fatalf("reset all: %+v", got)
	}
	if err := c.Reset(ctx, "nope"); !errors.Is(err, tinystore.ErrInvalid) {
		t.Fatalf("reset of no field: %v", err)
	}
}

func TestKV20KeptValueThatNoLongerFits(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	c := openSettings(t, store)
	if err := c.Update(ctx, func(s *cfgSettings) { s.Host = "kept.example"; s.Port = 7000 }); err != nil {
		t.Fatal(err)
	}
	type changed struct { // the program changed: port is text, host a number
		Port string `json:"port"`
		Host int    `json:"host"`
	}
	ch, err := kv.OpenConfig[changed](store, "app", kv.Defaults(changed{Port: "p", Host: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Get(); got != (changed{Port: "p", Host: 1}) {
		t.Fatalf("kept values that no longer fit are left out: %+v", got)
	}
	saysLeftOut(t, must[[]kv.Source](t)(ch.Sources()), "host", "no longer fits")
	if got := openSettings(t, store).Get().Port; got != 7000 {
		t.Fatalf("the program changed back: %d", got)
	}
}

// TestKV20ConfigChildProcess is the second process of
// TestKV20WatchSeesAnotherProcess; alone, it is skipped.
func TestKV20ConfigChildProcess(t *testing.T) {
	dir := os.Getenv("TINYSTORE_CONFIG_CHILD")
	if dir == "" {
		t.Skip("the second process of TestKV20WatchSeesAnotherProcess")
	}
	store, err := tinystore.Open(context.Background(), dir, tinystore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := openSettings(t, store)
	if err := c.Update(context.Background(), func(s *cfgSettings) { s.Limits.RPS = 777 }); err != nil {
		t.Fatal(err)
	}
}

func TestKV20WatchSeesAnotherProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, dir := openStore(t)
	c := openSettings(t, store)
	changes := make(chan cfgSettings, 4)
	watch := c.Watch(ctx)
	go func() {
		for s := range watch {
			changes <- s
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKV20ConfigChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TINYSTORE_CONFIG_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second process: %v\n%s", err, out)
	}
	committed := time.Now()
	select {
	case s := <-changes:
		if s.Limits.RPS != 777 {
			t.Fatalf("seen: %+v", s)
		}
		if d := time.Since(committed); d > time.Second {
			t.Fatalf("seen after %v", d)
		}
	case <-time.After(time.Second):
		t.Fatal("another process's change not seen within a second")
	}
	if err := c.Update(ctx, func(s *cfgSettings) { s.Port = 1234 }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-changes:
		if s.Port != 1234 {
			t.Fatalf("seen: %+v", s)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("this process's own change not seen at once")
	}
}

func TestKV20AWatchEndsWithItsContextOrTheStore(t *testing.T) {
	store, _ := openStore(t)
	c := openSettings(t, store)
	ended := func(watch func(func(cfgSettings) bool)) chan struct{} {
		done := make(chan struct{})
		go func() {
			for range watch {
			}
			close(done)
		}()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	byCtx := ended(c.Watch(ctx))
	byStore := ended(c.Watch(context.Background()))
	cancel()
	within(t, byCtx, "its context ended")
	ok(t, store.Close())
	within(t, byStore, "the store closed")
}

// within fails unless done closes within a second of what.
func within(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("a watch goes on after %s", what)
	}
}

// cfgStrict refuses a port under 8000.
type cfgStrict cfgSettings

// Validate refuses a port under 8000.
func (s *cfgStrict) Validate() error {
	if s.Port < 8000 {
		return fmt.Errorf("port %d is under 8000", s.Port)
	}
	return nil
}

func TestKV20KeptValuesValidateRefusesAreLeftOut(t *testing.T) {
	store, _ := openStore(t)
	c := openSettings(t, store)
	if err := c.Update(context.Background(), func(s *cfgSettings) { s.Port = 7000; s.Host = "kept.example" }); err != nil {
		t.Fatal(err)
	}
	strict, err := kv.OpenConfig[cfgStrict](store, "app", kv.Defaults(cfgStrict(cfgDefaults)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strict.Get(); got.Port != 8080 || got.Host != "localhost" {
		t.Fatalf("kept values Validate refuses together are all left out: %+v", got)
	}
	saysLeftOut(t, must[[]kv.Source](t)(strict.Sources()), "host", "port 7000 is under 8000")
}

func TestKV20FromEnvStandsWhereItIsGiven(t *testing.T) {
	store, dir := openStore(t)
	file := filepath.Join(dir, "app.json")
	if err := os.WriteFile(file, []byte(`{"port": 7070}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var fromFile map[string]any
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &fromFile); err != nil {
		t.Fatal(err)
	}
	env := kv.EnvVars(map[string]string{"APP_PORT": "9090"})
	over, err := kv.OpenConfig[cfgSettings](store, "over", kv.Defaults(cfgDefaults), kv.FromEnv("APP"), env,
		kv.Defaults(fromFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := over.Get().Port; got != 7070 {
		t.Fatalf("a Defaults after FromEnv is over the environment: port %d, want 7070", got)
	}
	under, err := kv.OpenConfig[cfgSettings](store, "under", kv.Defaults(cfgDefaults), kv.Defaults(fromFile),
		kv.FromEnv("APP"), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := under.Get().Port; got != 9090 {
		t.Fatalf("FromEnv after a Defaults is over it: port %d, want 9090", got)
	}
}

func TestKV20ANilSliceIsAnEmptyList(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	c, err := kv.OpenConfig[cfgSettings](store, "app", kv.Defaults(cfgSettings{Port: 8080}))
	if err != nil {
		t.Fatalf("Defaults with a nil slice: %v", err)
	}
	if got := c.Get().Hosts; len(got) != 0 {
		t.Fatalf("hosts %v, want empty", got)
	}
	if err := c.Update(ctx, func(s *cfgSettings) { s.Hosts = []string{"a.com"} }); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, func(s *cfgSettings) { s.Hosts = nil }); err != nil {
		t.Fatalf("an Update that sets a slice to nil: %v", err)
	}
	if got := c.Get().Hosts; len(got) != 0 {
		t.Fatalf("hosts %v after setting nil, want empty", got)
	}
}

type cfgServer struct {
	HTTPServer string `json:"HTTPServer"`
	UserID     int    `json:"userID"`
}

func TestKV20AVariableIsThePathInUpperSnakeCase(t *testing.T) {
	store, _ := openStore(t)
	c, err := kv.OpenConfig[cfgServer](store, "server", kv.FromEnv("APP"),
		kv.EnvVars(map[string]string{"APP_HTTP_SERVER": "0.0.0.0:80", "APP_USER_ID": "7"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Get(); got != (cfgServer{HTTPServer: "0.0.0.0:80", UserID: 7}) {
		t.Fatalf("got %+v", got)
	}
}

func TestKV20EveryBadVariableAndMissingFieldInOneError(t *testing.T) {
	store, _ := openStore(t)
	_, err := kv.OpenConfig[cfgDatabase](store, "db", kv.FromEnv("APP"),
		kv.EnvVars(map[string]string{"APP_POOL": "many"}))
	if !errors.Is(err, tinystore.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	for _, want := range []string{"APP_POOL", "DATABASE_URL", "2 problems"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}

func TestKV20LayersValidateRefusesAreRefusedAtOpen(t *testing.T) {
	store, _ := openStore(t)
	_, err := kv.OpenConfig[cfgStrict](store, "app", kv.Defaults(cfgStrict{Port: 80}))
	if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), "port 80 is under 8000") {
		t.Fatalf("got %v, want ErrInvalid saying why", err)
	}
}

func TestKV20DotEnvAsPeopleWriteIt(t *testing.T) {
	store, dir := openStore(t)
	file := filepath.Join(dir, ".env")
	pem := "-----BEGIN KEY-----\nMIIB\n-----END KEY-----"
	if err := os.WriteFile(file, []byte("APP_HOST=\""+pem+"\"\nAPP_PORT=9090\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := kv.OpenConfig[cfgSettings](store, "app", kv.Defaults(cfgDefaults), kv.FromEnv("APP", file),
		kv.EnvVars(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Get(); got.Host != pem || got.Port != 9090 {
		t.Fatalf("a double-quoted value over lines: %+v", got)
	}
	if err := os.WriteFile(file, []byte("1APP_PORT=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = kv.OpenConfig[cfgSettings](store, "app", kv.FromEnv("APP", file), kv.EnvVars(map[string]string{}))
	if !errors.Is(err, tinystore.ErrInvalid) || !strings.Contains(err.Error(), "must not start with a digit") {
		t.Fatalf("a name that starts with a digit: %v", err)
	}
}

// saysLeftOut fails unless the source of path, when listed, says why its
// kept value was left out.
func saysLeftOut(t *testing.T, sources []kv.Source, path, why string) {
	t.Helper()
	for _, s := range sources {
		if s.Path == path && !strings.Contains(s.LeftOut, why) {
			t.Fatalf("sources say why: %+v", s)
		}
	}
}
