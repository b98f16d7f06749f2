package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

func newTLSListener(l net.Listener, cfg *tls.Config) net.Listener { return tls.NewListener(l, cfg) }

// splice forwards a call that may turn into a raw stream (attach, exec
// start, anything with Upgrade): the request goes to dockerd on a
// connection of its own; a 101 or a raw-stream answer hijacks the
// client's connection and bytes flow both ways until both sides are
// done, each half-close passed on (docker run closes its write side
// first and still reads the output); any other answer is relayed as is.
func (p *Proxy) splice(w http.ResponseWriter, r *http.Request) {
	up, err := p.dial(r.Context())
	if err != nil {
		p.upstreamError(w, r, err)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI, out.Host = "", "docker"
	out.URL.Scheme, out.URL.Host = "http", "docker"
	if err := out.Write(up); err != nil {
		up.Close()
		p.upstreamError(w, r, err)
		return
	}
	ub := bufio.NewReader(up)
	resp, err := http.ReadResponse(ub, out)
	if err != nil {
		up.Close()
		p.upstreamError(w, r, err)
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && !rawStream(resp) {
		defer up.Close()
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(flushWriter{w}, resp.Body)
		return
	}
	conn, cb, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		p.log.Warn("cannot hijack the client connection", "path", r.URL.Path, "err", err)
		return
	}
	p.track(conn, true)
	defer p.track(conn, false)
	defer conn.Close()
	defer up.Close()
	fmt.Fprintf(cb, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	_ = resp.Header.Write(cb)
	_, _ = cb.WriteString("\r\n")
	if err := cb.Flush(); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, cb.Reader) // what the client buffered, then the rest
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(conn, ub)
		closeWrite(conn)
	}()
	wg.Wait()
}

// rawStream: dockerd hijacked the connection without an upgrade (old
// API versions' attach and exec start).
func rawStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return resp.StatusCode == http.StatusOK && strings.HasPrefix(ct, "application/vnd.docker.") && strings.Contains(ct, "stream")
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

// flushWriter flushes after every write so streamed answers keep flowing.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	_ = http.NewResponseController(f.w).Flush()
	return n, err
}
