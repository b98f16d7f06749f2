// Package mesh is weave's side of github.com/weaveworks/mesh: peer identity
// (names persisted in the data dir), the typed control-plane configuration,
// a log adapter, and wire-format helpers and test vectors for Weave Net
// 2.8.1's TCP protocol.
package mesh

import (
	"log/slog"

	wmesh "github.com/weaveworks/mesh"
)

// LoadOrCreatePeerName returns the peer name persisted in dataDir (file
// "peername"), creating a random locally-administered unicast MAC-style
// name and persisting it when there is none. A non-empty flagName (the
// --name flag) wins and is persisted.
func LoadOrCreatePeerName(dataDir, flagName string) (wmesh.PeerName, error) { panic("TODO") }

// Logger adapts slog to mesh.Logger.
func Logger(l *slog.Logger) wmesh.Logger { panic("TODO") }
