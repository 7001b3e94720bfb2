package tinystore

import (
	"context"
	"log/slog"
	"sync"

	"tinyshed.org/tinystore/internal/native"
)

var forwardLogs sync.Once

// startLogs sends the engine's records (memory at 80%, a full memory
// refusing new keys, a failed maintenance, a config value left out, a
// failed release of a once claim) to the default slog logger, at the
// time of each record, so that slog.SetDefault chooses where they go.
// Each carries the attribute target, the engine module that wrote it
// (tinystore::config).
func startLogs() {
	forwardLogs.Do(func() {
		native.ForwardLogs(func(level int, target, message string) {
			l := slog.LevelInfo
			switch level {
			case 1:
				l = slog.LevelError
			case 2:
				l = slog.LevelWarn
			}
			slog.Default().Log(context.Background(), l, "tinystore: "+message, "target", target)
		})
	})
}
