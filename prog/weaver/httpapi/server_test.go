package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestServeTCPAndUnix(t *testing.T) {
	h := NewAPIHandler(APIConfig{Backend: &fakeBackend{rep: sampleReport()}})
	tcp, err := Serve("127.0.0.1:0", h, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	resp, err := http.Get("http://" + tcp.Addr() + "/report?format={{.Version}}")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "1.2.3" {
		t.Errorf("TCP /report: %q", body)
	}

	sock := filepath.Join(t.TempDir(), "weave.sock")
	unix, err := Serve(sock, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err = c.Get("http://weave/status/targets")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	if string(body) != "192.168.100.2\n192.168.100.3\n" {
		t.Errorf("unix /status/targets: %q", body)
	}
	unix.Close()
	unix.Close() // idempotent
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket not removed: %v", err)
	}
}
