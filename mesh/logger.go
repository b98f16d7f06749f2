package mesh

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	wmesh "github.com/weaveworks/mesh"
)

// LogComponent is the value of the "component" attribute on every record
// logged through Logger.
const LogComponent = "mesh"

// Logger adapts slog to mesh.Logger. Lines are logged at INFO with a
// component=mesh attribute; lines reporting a peer-name collision or a
// duplicate connection (which usually mean two hosts share a peer name,
// e.g. cloned VMs) are logged at WARN.
func Logger(l *slog.Logger) wmesh.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &slogAdapter{l: l.With("component", LogComponent)}
}

type slogAdapter struct {
	l *slog.Logger
}

// collisionMarkers are the texts the mesh library uses for these
// conditions (connection.go peerNameCollisionError.Error and
// local_peer.go addConnection's "Multiple connections" error).
var collisionMarkers = []string{
	"peer names collision",
	"Multiple connections to",
}

// collisionHint tells the operator what a peer-name collision means and
// how to fix it; mesh itself only reports it as a connection error.
const collisionHint = "another peer uses our peer name (a cloned host?): give each host a unique --name, or delete the peername file in its data dir"

func (a *slogAdapter) Printf(format string, args ...interface{}) {
	msg := strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")
	level := levelFor(msg)
	if level == slog.LevelWarn && strings.Contains(msg, collisionMarkers[0]) {
		a.l.Log(context.Background(), level, msg, "hint", collisionHint)
		return
	}
	a.l.Log(context.Background(), level, msg)
}

func levelFor(msg string) slog.Level {
	for _, m := range collisionMarkers {
		if strings.Contains(msg, m) {
			return slog.LevelWarn
		}
	}
	return slog.LevelInfo
}
