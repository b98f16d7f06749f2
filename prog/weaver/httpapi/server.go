package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Server serves one HTTP handler on a TCP address or, when the address
// starts with "/", a unix socket. Close stops it and joins its goroutine.
type Server struct {
	srv      *http.Server
	addr     string
	sockPath string
	done     chan struct{}
	once     sync.Once
}

// shutdownTimeout bounds how long Close waits for in-flight requests.
const shutdownTimeout = 5 * time.Second

// Serve listens on addr and serves h in a goroutine owned by the Server.
func Serve(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, sockPath, err := listen(addr)
	if err != nil {
		return nil, err
	}
	// Requests see their context end when the server shuts down, so
	// long-lived ones (the status page's event stream) do not hold
	// Close for shutdownTimeout.
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(cancel)
	s := &Server{
		srv:      srv,
		addr:     ln.Addr().String(),
		sockPath: sockPath,
		done:     make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "addr", addr, "err", err)
		}
	}()
	return s, nil
}

func listen(addr string) (net.Listener, string, error) {
	if !strings.HasPrefix(addr, "/") {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
		}
		return ln, "", nil
	}
	if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("remove stale socket %s: %w", addr, err)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on unix socket %s: %w", addr, err)
	}
	return ln, addr, nil
}

// Addr is the address actually listened on (useful with port 0).
func (s *Server) Addr() string { return s.addr }

// Close shuts the server down, waits for its goroutine and removes the
// unix socket. Idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		<-s.done
		if s.sockPath != "" {
			_ = os.Remove(s.sockPath)
		}
	})
}
