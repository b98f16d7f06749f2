package main

import (
	"bytes"
	"strings"
	"testing"
)

const run = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: SKIPPING: needs root\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`

func summarize(t *testing.T, in string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	s := &summary{out: &out, logs: map[key][]string{}}
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	code := s.finish()
	return out.String(), code
}

func TestCountsAndSkipReasons(t *testing.T) {
	out, code := summarize(t, run)
	for _, want := range []string{"ok  \tp\t0.1s\n", "SKIP p TestB: b_test.go:9: SKIPPING: needs root", "tests: 1 passed, 0 failed, 1 skipped\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

func TestFailurePrintsOutputAndFails(t *testing.T) {
	in := run + `{"Action":"output","Package":"q","Test":"TestC","Output":"    c_test.go:3: boom\n"}
{"Action":"fail","Package":"q","Test":"TestC"}
{"Action":"fail","Package":"q"}
`
	out, code := summarize(t, in)
	if code != 1 || !strings.Contains(out, "--- FAIL: q TestC\n    c_test.go:3: boom") || !strings.Contains(out, "1 passed, 1 failed, 1 skipped") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestBuildFailureOrNoTestsFails(t *testing.T) {
	if _, code := summarize(t, `{"Action":"build-fail","Package":"r"}`+"\n"+run); code != 1 {
		t.Errorf("build failure: exit %d, want 1", code)
	}
	if _, code := summarize(t, "no events at all\n"); code != 1 {
		t.Errorf("no test ran: exit %d, want 1", code)
	}
}
