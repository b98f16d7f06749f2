// Package controller runs weave-npc's control loop: client-go informers on
// Pods (all of them, since policy peers may run anywhere), Namespaces and
// NetworkPolicies feed npc.Translate, and every change loads the node's new
// model through an Enforcer (npc/nft) in one transaction. Changes arriving
// while a load runs are coalesced into the next one.
//
// It also exports the Prometheus metrics of 2.8.1's npc
// (weavenpc_blocked_connections_total{protocol,dport},
// weavenpc_policy_enforcement_errors) plus a few about the loaded table, and
// logs blocked connections, at most once per protocol and port per poll.
package controller
