// Package nft enforces an npc.Model with one nftables table of ours,
// `inet weave-npc`, written through github.com/google/nftables.
//
// Bridged frames reach the inet forward hook because br_netfilter is on
// (bridge-nf-call-iptables=1, which Apply checks and sets): pod-to-pod
// traffic on the weave bridge appears with iifname and oifname "weave".
// Traffic from the host to its pods leaves through the output hook and is
// never filtered here (kubelet probes). Pod-to-host traffic (to any address
// of the node, the bridge's or eth0's) enters the input hook with iifname
// "weave" and meets the pods' egress policies like any other destination.
//
// The table, rebuilt whole by every Apply in one atomic netlink batch (add,
// delete, add: the kernel swaps old for new in one transaction, so no packet
// ever sees a half-built state and conntrack entries are untouched):
//
//	chain forward  (hook forward, priority filter)
//	    iifname "weave" goto pods; oifname "weave" goto pods
//	chain input    (hook input, priority filter)
//	    iifname "weave" goto pods
//	chain pods
//	    ct state established,related accept
//	    meta nfproto != ipv4 → mark, accept
//	    iifname "weave" ip saddr @egress-isolated jump egress
//	    oifname "weave" ip daddr @ingress-isolated jump ingress
//	    mark, accept
//	chain ingress / egress
//	    one rule per policy rule (and port kind), matching sets: return
//	    jump blocked
//	chain blocked
//	    count into the dynamic set @blocked (protocol . port, with counters)
//	    log (rate-limited), drop
//
// "mark" ORs Mark (= internal/netdev.NPCMark) into the packet mark: the router's guard table
// (weaver --expect-npc) drops new connections on the bridge that lack it,
// so pods are closed while weave-npc is not running.
package nft
