package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Where 2.8.1 keeps its peer list; ours is the same so both cooperate.
const (
	ConfigMapNamespace = "kube-system"
	ConfigMapName      = "weave-net"
	AnnotationPrefix   = "kube-peers.weave.works/"
	PeersAnnotation    = AnnotationPrefix + "peers"
)

// PeerInfo is one entry of the peer list (JSON field names as 2.8.1's).
type PeerInfo struct {
	PeerName string // the router's peer name (MAC-like)
	NodeName string // the Kubernetes Node it ran on
}

// PeerList is the value of annotation PeersAnnotation.
type PeerList struct {
	Peers []PeerInfo
}

// Contains reports whether peer is listed.
func (l PeerList) Contains(peer string) bool {
	for _, p := range l.Peers {
		if p.PeerName == peer {
			return true
		}
	}
	return false
}

// without returns l minus every entry of peer.
func (l PeerList) without(peer string) PeerList {
	out := PeerList{Peers: []PeerInfo{}}
	for _, p := range l.Peers {
		if p.PeerName != peer {
			out.Peers = append(out.Peers, p)
		}
	}
	return out
}

// LockKey is the annotation that records who reclaims peer: 2.8.1's
// prefix plus the peer name with every character an annotation key may not
// hold (':' in a peer name) replaced by '_'.
func LockKey(peer string) string {
	b := []byte(peer)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	return AnnotationPrefix + string(b)
}

// Store reads and writes the peer list ConfigMap. Every write is an Update
// of the object as read, so the API server rejects it (409 Conflict) when
// someone else wrote in between.
type Store struct {
	Client    corev1client.ConfigMapsGetter
	Namespace string // default ConfigMapNamespace
	Name      string // default ConfigMapName
}

func (s *Store) ns() string   { return or(s.Namespace, ConfigMapNamespace) }
func (s *Store) name() string { return or(s.Name, ConfigMapName) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Get returns the ConfigMap, creating it (empty) when it does not exist.
func (s *Store) Get(ctx context.Context) (*corev1.ConfigMap, error) {
	for {
		cm, err := s.Client.ConfigMaps(s.ns()).Get(ctx, s.name(), metav1.GetOptions{})
		if err == nil {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			return cm, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.ns(), s.name(), err)
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns(), Name: s.name()}}
		_, err = s.Client.ConfigMaps(s.ns()).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create ConfigMap %s/%s: %w", s.ns(), s.name(), err)
		}
	}
}

// Update writes cm back; a concurrent write makes it fail with a Conflict
// (apierrors.IsConflict).
func (s *Store) Update(ctx context.Context, cm *corev1.ConfigMap) error {
	if _, err := s.Client.ConfigMaps(s.ns()).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s/%s: %w", s.ns(), s.name(), err)
	}
	return nil
}

// Modify applies fn to a fresh copy of the ConfigMap and writes it when fn
// reports a change, retrying after a short random pause on conflicts until
// it succeeds or ctx ends.
func (s *Store) Modify(ctx context.Context, fn func(cm *corev1.ConfigMap) (bool, error)) error {
	for {
		cm, err := s.Get(ctx)
		if err != nil {
			return err
		}
		changed, err := fn(cm)
		if err != nil || !changed {
			return err
		}
		err = s.Update(ctx, cm)
		if !apierrors.IsConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("update ConfigMap %s/%s: %w", s.ns(), s.name(), ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(200 * time.Millisecond)))):
		}
	}
}

// Peers decodes the peer list of cm; no annotation is an empty list.
func Peers(cm *corev1.ConfigMap) (PeerList, error) {
	var l PeerList
	v, ok := cm.Annotations[PeersAnnotation]
	if !ok {
		return l, nil
	}
	if err := json.Unmarshal([]byte(v), &l); err != nil {
		return l, fmt.Errorf("annotation %s of ConfigMap %s/%s: %w", PeersAnnotation, cm.Namespace, cm.Name, err)
	}
	return l, nil
}

// setPeers encodes l into cm.
func setPeers(cm *corev1.ConfigMap, l PeerList) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode peer list: %w", err)
	}
	cm.Annotations[PeersAnnotation] = string(b)
	return nil
}

// AddPeer records peer as running on node, unless it is listed already.
func (s *Store) AddPeer(ctx context.Context, peer, node string) error {
	return s.Modify(ctx, func(cm *corev1.ConfigMap) (bool, error) {
		l, err := Peers(cm)
		if err != nil || l.Contains(peer) {
			return false, err
		}
		l.Peers = append(l.Peers, PeerInfo{PeerName: peer, NodeName: node})
		return true, setPeers(cm, l)
	})
}
