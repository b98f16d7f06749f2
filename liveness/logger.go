package liveness

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

// slogWriter turns memberlist's "[LEVEL] memberlist: text" lines into
// slog records. memberlist logs a remote peer's failure as [ERR] (a dead
// peer is expected here, not our error), so ERR and WARN become Warn,
// INFO becomes Info and DEBUG Debug.
//
// memberlist has no event for "suspect", so the writer also spots the line
// its prober logs when it starts suspecting a peer and reports it.
type slogWriter struct {
	l         *slog.Logger
	onSuspect func(peer string)
}

func newStdLogger(l *slog.Logger, onSuspect func(string)) *log.Logger {
	return log.New(slogWriter{l.With("component", "liveness"), onSuspect}, "", 0)
}

// suspectLine is how memberlist v0.7.0 logs its own suspicion of a peer
// (state.go, probeNode); a test pins it.
const suspectPrefix, suspectSuffix = "Suspect ", " has failed, no acks received"

func suspectedPeer(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, suspectPrefix)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, suspectSuffix)
}

var levelPrefixes = []struct {
	prefix string
	level  slog.Level
}{
	{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelWarn}, {"[ERROR]", slog.LevelWarn},
}

func parseLine(line string) (slog.Level, string) {
	line = strings.TrimSpace(line)
	level := slog.LevelInfo
	for _, p := range levelPrefixes {
		if rest, ok := strings.CutPrefix(line, p.prefix); ok {
			level, line = p.level, strings.TrimSpace(rest)
			break
		}
	}
	return level, strings.TrimPrefix(line, "memberlist: ")
}

func (w slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		level, msg := parseLine(string(line))
		if peer, ok := suspectedPeer(msg); ok && w.onSuspect != nil {
			w.onSuspect(peer)
		}
		w.l.Log(context.Background(), level, msg)
	}
	return len(p), nil
}
