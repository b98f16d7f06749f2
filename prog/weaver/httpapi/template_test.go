package httpapi

import (
	"errors"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// nestedPrintf is issue 9's killer: printf "%01000000d" nested depth times.
func nestedPrintf(depth int) string {
	s := "1"
	for range depth {
		s = `(printf "%01000000d" ` + s + `)`
	}
	return "{{" + strings.TrimSuffix(strings.TrimPrefix(s, "("), ")") + "}}"
}

func doubling(n int) string {
	var b strings.Builder
	b.WriteString(`{{$a := "xxxxxxxx"}}`)
	for range n {
		b.WriteString(`{{$a = printf "%s%s" $a $a}}`)
	}
	return b.String() + "{{len $a}}"
}

// Each attack is sized to exceed a limit by a small factor only, so that a
// regression (a limit gone) costs seconds and megabytes, not the machine.
func TestReportTemplateAttacksCostNothing(t *testing.T) {
	rep := &Report{Version: "1.2.3"}
	rep.Router.TerminationCount = 5 * maxTemplateSteps
	cases := []struct{ name, tmpl, want string }{
		{"nested printf width 1e6", nestedPrintf(8), "width or precision above 1000"},
		{"template too long", strings.Repeat("x", maxTemplateSize+1), "template of 4097 bytes is over limit"},
		{"range over a big literal", "{{range 100000000}}{{end}}", "number 100000000 is over limit"},
		{"range over a big field, no output", "{{range .Router.TerminationCount}}{{end}}", "over limit"},
		{"string doubling", doubling(16), "over limit"},
		{"print doubling", `{{$a := "xxxxxxxxxxxxxxxx"}}` + strings.Repeat(`{{$a = print $a $a}}`, 16), "over limit"},
		{"output cap", `{{range 10000}}{{printf "%1000s" "x"}}{{end}}`, "output larger than"},
		{"star width", `{{printf "%*d" 5000 1}}`, "* width is not allowed"},
		{"recursive define", `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, "not allowed"},
		{"nested ranges", "{{range 200}}{{range 200}}{{range 200}}{{end}}{{end}}{{end}}", "over limit"},
	}
	for _, c := range cases {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		out, err := runReportTemplate(c.tmpl, rep)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %d bytes, err %v; want an error containing %q", c.name, len(out), err, c.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: allocated %d MiB", c.name, grew>>20)
		}
		if took > maxTemplateTime+time.Second {
			t.Errorf("%s: took %v", c.name, took)
		}
	}
}

func TestReportTemplateAttackIs400(t *testing.T) {
	a := newAPITest(t, nil)
	killer := nestedPrintf(8)
	t.Logf("killer template: %d bytes", len(killer))
	code, _, body := a.do("GET", "/report?format="+url.QueryEscape(killer), "")
	if code != 400 || !strings.Contains(body, "width or precision above 1000") {
		t.Fatalf("got %d %q, want 400 naming the width limit", code, body)
	}
}

func TestReportTemplateUsualTemplatesStillWork(t *testing.T) {
	rep := &Report{Version: "1.2.3"}
	rep.Router.Name = "aa:00:00:00:00:01"
	rep.Router.Peers = []PeerReport{{Name: "p1", NickName: "one"}, {Name: "p2", NickName: "two"}}
	for tmpl, want := range map[string]string{
		`{{.Version}}`: "1.2.3",
		`{{range .Router.Peers}}{{.Name}}({{.NickName}}) {{end}}`:                         "p1(one) p2(two) ",
		`{{printf "%-20s|%5.2f|%x" .Router.Name 3.14159 255}}`:                            "aa:00:00:00:00:01   | 3.14|ff",
		`{{len .Router.Peers}} {{if .Router.Peers}}yes{{else}}no{{end}}`:                  "2 yes",
		`{{with .Router}}{{.Name}}{{end}} {{range $i, $p := .Router.Peers}}{{$i}}{{end}}`: "aa:00:00:00:00:01 01",
		`{{print "a" 1}} {{html "<x>"}} {{js "'"}} {{urlquery "a b"}} {{printf "%%"}}`:    `a1 &lt;x&gt; \' a+b %`,
	} {
		out, err := runReportTemplate(tmpl, rep)
		if err != nil || string(out) != want {
			t.Errorf("%s: %q %v, want %q", tmpl, out, err, want)
		}
	}
}

func FuzzReportTemplate(f *testing.F) {
	for _, s := range []string{"{{.Version}}", "{{range .Router.Peers}}{{.Name}}{{end}}", nestedPrintf(2),
		`{{printf "%5.3d" 7}}`, doubling(3), "{{range 3}}{{.}}{{end}}"} {
		f.Add(s)
	}
	rep := &Report{Version: "1.2.3"}
	rep.Router.Peers = []PeerReport{{Name: "p1"}}
	rep.Router.TerminationCount = 5 * maxTemplateSteps
	f.Fuzz(func(t *testing.T, tmpl string) {
		start := time.Now()
		out, err := runReportTemplate(tmpl, rep)
		if took := time.Since(start); took > maxTemplateTime+time.Second {
			t.Fatalf("took %v", took)
		}
		if err == nil && len(out) > maxTemplateOutput {
			t.Fatalf("output of %d bytes", len(out))
		}
		_ = errors.Is(err, errTemplateLimit)
	})
}
