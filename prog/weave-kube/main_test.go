package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestBadSettingsExitTwoNamingThem: weave-kube refuses bad environment
// before doing anything, naming each bad variable.
func TestBadSettingsExitTwoNamingThem(t *testing.T) {
	t.Setenv("HOSTNAME", "node1")
	t.Setenv("CONN_LIMIT", "lots")
	t.Setenv("IPTABLES_BACKEND", "iptables")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errOut.String())
	}
	for _, want := range []string{`CONN_LIMIT="lots"`, `IPTABLES_BACKEND="iptables"`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, errOut.String())
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"launch"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `unknown command "launch"`) {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := run(context.Background(), []string{"help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "weave-kube init") {
		t.Fatalf("help: exit %d: %s", code, out.String())
	}
}
