package netdev

// NPCMark is the packet mark bit weave-npc ORs into every new connection
// it lets through the weave bridge. The router's guard (EnsureNPCGuard,
// weaver --expect-npc) drops new bridged connections without it, so pods
// stay closed until weave-npc has loaded its rules. 2.8.1's npc used the
// same bit for its egress mark.
const NPCMark uint32 = 0x40000
