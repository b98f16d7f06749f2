package cli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// The test binary doubles as a fake weaver: launch tests symlink it as
// bin/weaver and set WEAVE_FAKE_WEAVER to pick a behaviour.
func TestMain(m *testing.M) {
	if mode := os.Getenv("WEAVE_FAKE_WEAVER"); mode != "" {
		os.Exit(fakeWeaver(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeWeaver modes: "serve" (503 for WEAVE_FAKE_503 polls, then ready),
// "503" (never ready), "stubborn" (ready, ignores SIGTERM), "exit"
// (logs an error and exits 1). It records its argv in WEAVE_FAKE_ARGS.
func fakeWeaver(mode string, args []string) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("weave router fake-1.0")
		return 0
	}
	if f := os.Getenv("WEAVE_FAKE_ARGS"); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(args, "\n")+"\n"), 0o644)
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "INFO: starting")
		fmt.Fprintln(os.Stderr, "FATAL: create bridge weave: operation not permitted")
		return 1
	}
	sigs := make(chan os.Signal, 1)
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM)
	}
	l, err := fakeListen(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	notReady, _ := strconv.Atoi(os.Getenv("WEAVE_FAKE_503"))
	var polls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if mode == "503" || polls.Add(1) <= int64(notReady) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "        Version: fake-1.0")
	})
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("format") {
		case "{{.Router.Name}}":
			fmt.Fprint(w, "aa:bb:cc:dd:ee:ff")
		case "{{.Version}}":
			fmt.Fprint(w, "fake-1.0")
		}
	})
	go func() { _ = http.Serve(l, mux) }() // dies with the process
	<-sigs
	return 0
}

// fakeListen listens on the --http-addr value (a unix socket path).
func fakeListen(args []string) (net.Listener, error) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--http-addr="); ok {
			return net.Listen("unix", v)
		}
	}
	return nil, fmt.Errorf("fake weaver: no --http-addr in %q", args)
}

// fakeWeaverSetup installs the fake weaver for h and returns the file
// its argv is recorded in.
func (h *harness) fakeWeaverSetup(mode string) string {
	h.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		h.t.Fatal(err)
	}
	dir := h.t.TempDir()
	bin := filepath.Join(dir, "weaver")
	if err := os.Symlink(exe, bin); err != nil {
		h.t.Fatal(err)
	}
	argsFile := filepath.Join(dir, "args")
	h.t.Setenv("WEAVE_FAKE_WEAVER", mode)
	h.t.Setenv("WEAVE_FAKE_ARGS", argsFile)
	h.cfg.WeaverPath = bin
	h.cfg.HTTPAddr = filepath.Join(dir, "w.sock")
	h.t.Cleanup(h.killRouter)
	return argsFile
}

// killRouter makes sure no fake weaver outlives its test.
func (h *harness) killRouter() {
	data, err := os.ReadFile(filepath.Join(h.cfg.RunDir, "weaver.pid"))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}
}
