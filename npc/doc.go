// Package npc translates Kubernetes networking/v1 NetworkPolicies into a
// rule model for one node: named address and port sets plus a short list of
// rules that reference them (never one rule per pod pair).
//
// Translate is pure: it takes the pods, namespaces and policies a controller
// sees and returns a Model, which npc/nft renders as an nftables table and
// Model.Allows interprets in Go (the golden tests compare both against the
// Kubernetes semantics). The controller in npc/controller feeds it from
// client-go informers.
//
// Semantics follow the Kubernetes documentation for networking/v1:
//
//   - a pod is isolated for a direction once some policy selecting it has
//     that direction in its policyTypes (default: Ingress, plus Egress when
//     the policy has egress rules); otherwise that direction is allowed;
//   - traffic an isolated pod sends or receives passes only when some rule
//     of some policy selecting it allows it (policies add up, none subtracts);
//   - a connection needs both the sender's egress and the receiver's ingress
//     to allow it; each node enforces the directions of its own pods;
//   - replies of allowed connections and traffic from the node to its own
//     pods are outside policy (npc/nft accepts them before any rule).
package npc
