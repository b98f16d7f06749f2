package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// browser is a headless Chromium (Debian's package) driven over the
// DevTools protocol by chromedp. It records every console error, uncaught
// exception, browser log error (CSP violations, failed loads) and every
// request the page makes.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	errors   []string
	requests []string
}

// chromiumPath finds Debian's Chromium binary (the real one, not the
// /usr/bin/chromium wrapper script, whose shell noise lands on stderr).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err == nil {
		return "/usr/lib/chromium/chromium"
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		netnstest.SkipOrFail(t, "chromium not installed (test/deps.sh installs it)")
	}
	return p
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // we run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1440, 1000),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				b.errors = append(b.errors, "console."+string(e.Type)+": "+argsText(e.Args))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			b.errors = append(b.errors, fmt.Sprintf("exception: %s at %s:%d", d.Text, d.URL, d.LineNumber))
			if d.Exception != nil {
				b.errors = append(b.errors, "  "+d.Exception.Description)
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				b.errors = append(b.errors, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Description != "" {
			parts = append(parts, a.Description)
		} else {
			parts = append(parts, string(a.Value))
		}
	}
	return strings.Join(parts, " ")
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads url and waits for the page's first render.
func (b *browser) open(url string) {
	b.t.Helper()
	b.run(chromedp.Navigate(url))
	b.await("first render", `Number(document.body.dataset.renders || 0) > 0`, 15*time.Second)
}

// js runs a JavaScript statement, ignoring its value.
func (b *browser) js(stmt string) {
	b.t.Helper()
	if _, err := eval[any](b, "void ("+stmt+")"); err != nil && !errors.Is(err, chromedp.ErrJSUndefined) {
		b.t.Fatalf("browser: %s: %v", stmt, err)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// await polls a boolean JavaScript expression until it holds and returns
// how long that took.
func (b *browser) await(what, expr string, timeout time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		var ok bool
		if ok, err = eval[bool](b, expr); err == nil && ok {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond) // polling the DOM
	}
	b.t.Fatalf("page: %s not within %v (%s; last error %v)", what, timeout, expr, err)
	return 0
}

// screenshot saves the whole page as name.png in the test's artifact
// directory (kept with go test -artifacts) and logs where.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// checkClean fails on any console error and on any request to anywhere
// but origin.
func (b *browser) checkClean(origin string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		b.t.Errorf("browser error: %s", e)
	}
	if len(b.requests) == 0 {
		b.t.Error("the browser recorded no request at all")
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, origin+"/") {
			b.t.Errorf("the page requested %s, not on %s", u, origin)
		}
	}
}

// renderTime is the page's own measurement of its last render.
type renderTime struct {
	N, Peers, Links int
	View            string
	ScriptMs, Ms    float64
}

func (b *browser) lastRender() renderTime {
	b.t.Helper()
	r, err := eval[renderTime](b, `(() => { const r = window.weaveRender; return {N: r.n, Peers: r.peers, Links: r.links, View: r.view, ScriptMs: r.scriptMs, Ms: r.ms}; })()`)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// rerender forces count fresh renders (an input event on the filter
// re-renders) and returns the last with the median times of all.
func (b *browser) rerender(count int) renderTime {
	b.t.Helper()
	var ms, script []float64
	var last renderTime
	for range count {
		before := b.lastRender().N
		b.js(`document.getElementById("filter").dispatchEvent(new Event("input"))`)
		b.await("re-render", fmt.Sprintf(`Number(document.body.dataset.renders) > %d`, before), 10*time.Second)
		last = b.lastRender()
		ms, script = append(ms, last.Ms), append(script, last.ScriptMs)
	}
	slices.Sort(ms)
	slices.Sort(script)
	last.Ms, last.ScriptMs = ms[len(ms)/2], script[len(script)/2]
	return last
}

// proxyToNS listens on 127.0.0.1 in our namespace and forwards every
// connection to addr inside namespace ns, so the browser (here) reaches a
// router's status address (there). It returns "http://127.0.0.1:port".
func proxyToNS(t *testing.T, ns, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				var up net.Conn
				err := netns.Do(netnstest.NSPath(ns), func() error {
					var err error
					up, err = net.DialTimeout("tcp", addr, 3*time.Second)
					return err
				})
				if err != nil {
					return
				}
				track(up)
				defer up.Close()
				done := make(chan struct{})
				go func() { _, _ = io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); close(done) }()
				_, _ = io.Copy(c, up)
				c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}
