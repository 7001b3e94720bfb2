package kv_test

import (
	"context"
	"fmt"
	"os"

	"tinyshed.org/tinystore"
	"tinyshed.org/tinystore/kv"
)

// Settings from defaults, the environment and updates kept in kv.db.
func ExampleOpenConfig() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tinystore-config-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := tinystore.Open(ctx, dir, tinystore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

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
