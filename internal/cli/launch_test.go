package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/version"
)

func readPID(t *testing.T, h *harness) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.cfg.RunDir, "weaver.pid"))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestLaunchStopLifecycle(t *testing.T) {
	h := newHarness(t)
	argsFile := h.fakeWeaverSetup("serve")
	t.Setenv("WEAVE_FAKE_503", "3") // a few polls see "starting"
	h.cfg.Port, h.cfg.NoFastDP = "7000", true

	if _, out, _ := h.run("version"); out != "weave script "+version.Version+"\nweave router fake-1.0\n" {
		t.Errorf("version from weaver --version: %q", out)
	}
	code, out, errOut := h.run("launch", "--nickname", "n1", "10.0.0.2")
	if code != 0 || out != "aa:bb:cc:dd:ee:ff\n" {
		t.Fatalf("launch: %d %q %q", code, out, errOut)
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"--data-dir=" + h.cfg.DataDir, "--run-dir=" + h.cfg.RunDir,
		"--http-addr=" + h.cfg.HTTPAddr, "--port=7000", "--no-fastdp", "--nickname", "n1", "10.0.0.2"}, "\n") + "\n"
	if string(data) != want {
		t.Errorf("weaver argv:\n%s\nwant:\n%s", data, want)
	}
	pid := readPID(t, h)
	c := &cmd{Config: h.cfg.withDefaults()}
	if !c.alive(pid) || !c.isWeaver(pid) {
		t.Fatalf("pid %d from pid file is not a live weaver", pid)
	}
	if _, err := os.Stat(filepath.Join(h.cfg.RunDir, "weaver.log")); err != nil {
		t.Errorf("no weaver.log: %v", err)
	}

	code, _, errOut = h.run("launch")
	if code != 1 || strings.TrimSpace(errOut) != "weave router is already running (pid "+strconv.Itoa(pid)+")" {
		t.Errorf("second launch: %d %q", code, errOut)
	}
	if _, out, _ = h.run("version"); out != "weave script "+version.Version+"\nweave router fake-1.0\n" {
		t.Errorf("version from API: %q", out)
	}

	if code, _, errOut = h.run("stop"); code != 0 || errOut != "" {
		t.Fatalf("stop: %d %q", code, errOut)
	}
	if c.alive(pid) {
		t.Errorf("weaver pid %d still alive after stop", pid)
	}
	if _, err := os.Stat(filepath.Join(h.cfg.RunDir, "weaver.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file survived stop: %v", err)
	}
	if code, _, errOut = h.run("stop"); code != 0 || strings.TrimSpace(errOut) != "weave router is not running" {
		t.Errorf("second stop: %d %q", code, errOut)
	}
}

func TestLaunchShowsLogTailWhenWeaverExits(t *testing.T) {
	h := newHarness(t)
	h.fakeWeaverSetup("exit")
	// An earlier launch's failure stays in the (appended) log; it must not
	// be shown as this launch's.
	if err := os.MkdirAll(h.cfg.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.cfg.RunDir, "weaver.log"), []byte("FATAL: an old error from yesterday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.run("launch")
	if strings.Contains(errOut, "old error from yesterday") {
		t.Errorf("launch showed an earlier launch's log: %q", errOut)
	}
	if code != 1 || out != "" {
		t.Fatalf("launch: %d %q", code, out)
	}
	for _, want := range []string{"weave router exited before it was ready (exit status 1)",
		"INFO: starting", "FATAL: create bridge weave: operation not permitted"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(h.cfg.RunDir, "weaver.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left after failed launch: %v", err)
	}
}

func TestLaunchTimesOut(t *testing.T) {
	h := newHarness(t)
	h.fakeWeaverSetup("503")
	h.cfg.LaunchTimeout = 300 * time.Millisecond
	code, _, errOut := h.run("launch")
	if code != 1 || !strings.Contains(errOut, "did not answer on unix://"+h.cfg.HTTPAddr+" within 300ms") {
		t.Fatalf("launch: %d %q", code, errOut)
	}
	if code, _, errOut = h.run("stop"); code != 0 || errOut != "" {
		t.Errorf("stop after timeout: %d %q", code, errOut)
	}
}

func TestLaunchRefusesWhenAPIAnswers(t *testing.T) {
	h := newHarness(t)
	argsFile := h.fakeWeaverSetup("serve")
	r := h.withRouter()
	r.set("GET /status", 503, "starting")
	code, _, errOut := h.run("launch")
	if code != 1 || !strings.Contains(errOut, "weave router is already running (it answers on http://") {
		t.Fatalf("launch: %d %q", code, errOut)
	}
	if _, err := os.Stat(argsFile); !os.IsNotExist(err) {
		t.Errorf("weaver was started anyway")
	}
}

func TestStalePIDFileIsIgnored(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"dead process": dead.ProcessState.Pid(), "not a weaver": os.Getpid()} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.fakeWeaverSetup("serve")
			pidFile := filepath.Join(h.cfg.RunDir, "weaver.pid")
			if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, _, errOut := h.run("stop"); code != 0 || strings.TrimSpace(errOut) != "weave router is not running" {
				t.Fatalf("stop: %d %q", code, errOut)
			}
			if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := h.run("launch"); code != 0 || out != "aa:bb:cc:dd:ee:ff\n" {
				t.Fatalf("launch over stale pid file: %d %q %q", code, out, errOut)
			}
			if got := readPID(t, h); got == pid {
				t.Errorf("pid file still holds the stale pid %d", pid)
			}
		})
	}
}

func TestStopKillsStubbornRouter(t *testing.T) {
	h := newHarness(t)
	h.fakeWeaverSetup("stubborn")
	h.cfg.StopTimeout = 300 * time.Millisecond
	if code, _, errOut := h.run("launch"); code != 0 {
		t.Fatalf("launch: %q", errOut)
	}
	pid := readPID(t, h)
	code, _, errOut := h.run("stop")
	if code != 0 || !strings.Contains(errOut, "ignored SIGTERM") {
		t.Fatalf("stop: %d %q", code, errOut)
	}
	if (&cmd{Config: h.cfg.withDefaults()}).alive(pid) {
		t.Errorf("stubborn weaver %d survived", pid)
	}
}

func TestLaunchFlagsOverrideEnvironment(t *testing.T) {
	h := newHarness(t)
	argsFile := h.fakeWeaverSetup("serve")
	sock := filepath.Join(filepath.Dir(argsFile), "other.sock")
	runDir := filepath.Join(t.TempDir(), "run2")
	h.cfg.MTU = "1400"
	code, out, errOut := h.run("launch", "--http-addr="+sock, "--run-dir", runDir, "--mtu=1376")
	if code != 0 || out != "aa:bb:cc:dd:ee:ff\n" {
		t.Fatalf("launch: %d %q %q", code, out, errOut)
	}
	t.Cleanup(func() { h.cfg.RunDir = runDir; h.killRouter() })
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"--data-dir=" + h.cfg.DataDir,
		"--http-addr=" + sock, "--run-dir", runDir, "--mtu=1376"}, "\n") + "\n"
	if string(data) != want {
		t.Errorf("weaver argv:\n%s\nwant:\n%s", data, want)
	}
	if _, err := os.Stat(filepath.Join(runDir, "weaver.pid")); err != nil {
		t.Errorf("pid file not in --run-dir: %v", err)
	}
}

func TestParseLaunch(t *testing.T) {
	l, err := parseLaunch([]string{"--password", "s3cret", "-port=7000", "--no-fastdp", "10.0.0.2", "--", "--nickname"})
	if err != nil {
		t.Fatal(err)
	}
	if l.given["password"] != "s3cret" || l.given["port"] != "7000" || !l.bools["no-fastdp"] {
		t.Errorf("parsed %+v", l)
	}
	if _, ok := l.given["nickname"]; ok || l.bools["nickname"] {
		t.Errorf("flag after -- was parsed: %+v", l)
	}
	if _, err := parseLaunch([]string{"--mtu"}); err == nil || err.Error() != "launch: --mtu needs a value" {
		t.Errorf("missing value: %v", err)
	}
}

// TestWeaverArgvIsLaunchs: WeaverArgv gives the flags launch derives from
// the environment, lets args override them, and keeps args (peers) last.
func TestWeaverArgvIsLaunchs(t *testing.T) {
	cfg := Config{WeaverPath: "/x/weaver", DockerSocket: "/nonexistent/docker.sock", DataDir: "/d", RunDir: "/r", HTTPAddr: "127.0.0.1:7000", MTU: "1400", NoFastDP: true,
		StatusAddr: "127.0.0.1:6782"}
	argv, err := WeaverArgv(context.Background(), cfg, []string{"--mtu=1300", "--nickname", "n1", "10.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(argv, " ")
	want := "/x/weaver --data-dir=/d --run-dir=/r --http-addr=127.0.0.1:7000 --status-addr=127.0.0.1:6782 --no-fastdp --mtu=1300 --nickname n1 10.0.0.2"
	if got != want {
		t.Fatalf("argv =\n %s\nwant\n %s", got, want)
	}
	if _, err := WeaverArgv(context.Background(), cfg, []string{"--mtu"}); err == nil {
		t.Fatal("flag without its value: no error")
	}
}

func TestLaunchRotatesALargeLog(t *testing.T) {
	h := newHarness(t)
	h.fakeWeaverSetup("exit")
	if err := os.MkdirAll(h.cfg.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(h.cfg.RunDir, "weaver.log")
	if err := os.WriteFile(logPath, bytes.Repeat([]byte("old line\n"), maxLogSize/9+1), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run("launch")
	if st, err := os.Stat(logPath + ".1"); err != nil || st.Size() <= maxLogSize {
		t.Fatalf("old log not moved to weaver.log.1: %v", err)
	}
	if st, err := os.Stat(logPath); err != nil || st.Size() > 1<<20 {
		t.Fatalf("new log: %v %v", st, err)
	}
}
