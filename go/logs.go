package tinystore

import (
	"context"
	"log/slog"
	"sync"

	"tinyshed.org/tinystore/internal/native"
)

var forwardLogs sync.Once

// loggers maps a store's log id to its Options.Logger.
var loggers sync.Map

// forgetLogger drops a closed store's logger: a record about the store
// that the pump takes later goes to the default logger.
func forgetLogger(id uint64) { loggers.Delete(id) }

// startLogs sends the engine's records (memory at 80%, a full memory
// refusing new keys, a failed maintenance, a config value left out, a
// failed release of a once claim) to the Options.Logger of the store they
// are about, or to the default slog logger, at the time of each record, so
// that slog.SetDefault chooses where those go. Each carries the attribute
// target, the engine module that wrote it (tinystore::config).
func startLogs() {
	forwardLogs.Do(func() {
		native.ForwardLogs(func(level int, store uint64, target, message string) {
			l := slog.LevelInfo
			switch level {
			case 1:
				l = slog.LevelError
			case 2:
				l = slog.LevelWarn
			}
			logger := slog.Default()
			if v, ok := loggers.Load(store); ok {
				logger = v.(*slog.Logger)
			}
			logger.Log(context.Background(), l, "tinystore: "+message, "target", target)
		})
	})
}
