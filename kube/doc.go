// Package kube is the Kubernetes agent behind prog/weave-kube, the program
// the weave-net DaemonSet runs on every node in place of Weave Net 2.8.1's
// weave-kube image.
//
// It reads the DaemonSet's environment (Config, with 2.8.1's knobs), finds
// its peers from the Nodes of the cluster (client-go informers: in-cluster
// config, or KUBECONFIG), starts weaver with the command line `weave launch`
// builds plus 2.8.1's Kubernetes flags, marks the Node's NetworkUnavailable
// condition False once the router answers, and then follows Node events:
// every change re-connects the router to the current set of peers (POST
// /connect replace=true), and a deleted Node's peer has its address space
// reclaimed (DELETE /peer/<name>) by exactly one survivor.
//
// Reclaim uses 2.8.1's records so mixed DaemonSets cooperate: ConfigMap
// kube-system/weave-net, annotation kube-peers.weave.works/peers holding
// {"Peers":[{"PeerName":..,"NodeName":..}]}, and one lock annotation
// kube-peers.weave.works/<peer name with ':' as '_'> per peer being
// reclaimed, whose value is the reclaimer's peer name. Every write is an
// Update carrying the resourceVersion it read, so of two racing nodes only
// one wins the lock; the loser sees a conflict and leaves the peer alone.
package kube
