package mesh

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a goroutine-safe log sink (mesh logs from many goroutines).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestLogger() (*syncBuffer, *slog.Logger) {
	var sink syncBuffer
	return &sink, slog.New(slog.NewTextHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestLoggerLevelsAndComponent(t *testing.T) {
	sink, l := newTestLogger()
	lg := Logger(l)
	lg.Printf("->[%s] connection accepted", "127.0.0.1:1234")
	lg.Printf("->[%s|%s]: connection shutting down due to error: %v", "10.0.0.1:6783", "aa:00:00:00:00:01(h1)",
		`local "aa:00:00:00:00:01(h1)" and remote "aa:00:00:00:00:01(h1b)" peer names collision`)
	lg.Printf("->[x|y]: connection shutting down due to error: Multiple connections to y added to x\n")
	lines := strings.Split(strings.TrimSpace(sink.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines: %q", len(lines), lines)
	}
	wantLevel := []string{"level=INFO", "level=WARN", "level=WARN"}
	for i, line := range lines {
		if !strings.Contains(line, wantLevel[i]) || !strings.Contains(line, "component=mesh") {
			t.Errorf("line %d %q: want %s and component=mesh", i, line, wantLevel[i])
		}
	}
	if !strings.Contains(lines[0], `msg="->[127.0.0.1:1234] connection accepted"`) {
		t.Errorf("message not formatted: %q", lines[0])
	}
	if !strings.Contains(lines[1], "hint=") || strings.Contains(lines[2], "hint=") {
		t.Errorf("want the peer-name hint on the collision line only: %q", lines[1:])
	}
	if strings.Contains(lines[2], `\n`) {
		t.Errorf("trailing newline kept: %q", lines[2])
	}
}

func TestLoggerNilIsSafe(t *testing.T) {
	Logger(nil).Printf("dropped %d", 1)
}
