// Package nlsafe is the one way this module dumps kernel netlink tables
// (links, addresses, routes, neighbours). The kernel marks a dump whose
// table changed while it was being read (NLM_F_DUMP_INTR), and
// vishvananda/netlink then returns netlink.ErrDumpInterrupted with
// possibly incomplete results; these wrappers retry the dump until it is
// consistent, as the CNI plugins' netlinksafe does. internal/repotest fails
// on a direct dump call anywhere else.
package nlsafe
