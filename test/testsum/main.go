// Command testsum reads `go test -json` events on stdin (one or several
// runs, one after the other) and prints what a person needs from a long
// run: each package's result line as it arrives, the full output of every
// failed test, every skipped test with its reason, and a closing line
// "tests: N passed, N failed, N skipped". It exits 1 when any test or
// package failed, or when no test ran at all.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

type summary struct {
	out            io.Writer
	logs           map[key][]string
	skips          []string
	passed, failed int
	skipped        int
	pkgFailed      bool
}

func main() {
	s := &summary{out: os.Stdout, logs: map[key][]string{}}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	os.Exit(s.finish())
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(s.out, string(line)) // not an event: go vet or build output
			continue
		}
		s.handle(e)
	}
	return sc.Err()
}

func (s *summary) handle(e event) {
	k := key{e.Package, e.Test}
	switch {
	case e.Action == "output" && e.Test == "":
		fmt.Fprint(s.out, e.Output) // package result lines, TestMain output
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Action == "output":
		s.logs[k] = append(s.logs[k], e.Output)
	case e.Action == "fail" && e.Test == "", e.Action == "build-fail":
		s.pkgFailed = true
	case e.Action == "pass" && e.Test != "":
		s.passed++
		delete(s.logs, k)
	case e.Action == "fail":
		s.failed++
		fmt.Fprintf(s.out, "--- FAIL: %s %s\n%s", e.Package, e.Test, strings.Join(s.logs[k], ""))
		delete(s.logs, k)
	case e.Action == "skip" && e.Test != "":
		s.skipped++
		s.skips = append(s.skips, fmt.Sprintf("%s %s: %s", e.Package, e.Test, skipReason(s.logs[k])))
		delete(s.logs, k)
	}
}

// skipReason is the test's own output without the framework's lines.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		msg = append(msg, t)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " / ")
}

func (s *summary) finish() int {
	sort.Strings(s.skips)
	fmt.Fprintf(s.out, "\nskipped tests: %d\n", len(s.skips))
	for _, sk := range s.skips {
		fmt.Fprintln(s.out, "  SKIP", sk)
	}
	fmt.Fprintf(s.out, "tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	if s.failed > 0 || s.pkgFailed || s.passed == 0 {
		return 1
	}
	return 0
}
