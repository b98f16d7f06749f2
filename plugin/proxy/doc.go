// Package proxy is weave's Docker API proxy, as Weave Net 2.8.1's:
// `weave launch; eval $(weave env); docker run ...` puts every container
// created through it on the mesh. It listens where 2.8.1 did (a unix
// socket, or TCP 12375 when Docker is on TCP) and passes every call to
// the real Docker API unchanged (streams, hijacked attach and exec,
// chunked bodies), acting only on container create, start and restart:
//
//   - create: unless the container runs with --net=host, none or
//     container:, or has WEAVE_CIDR=none (or no WEAVE_CIDR under
//     --no-default-ipalloc), its entrypoint is prefixed with /w/w, our
//     weavewait binary bind-mounted read-only, which waits for ethwe
//     before it execs the real command; a weaveDNS host name is derived
//     from the container name (or a label) and the container gets
//     weaveDNS as its resolver;
//   - start, restart (and Docker's own restarts, seen as events): the
//     container gets ethwe with its WEAVE_CIDR addresses (IPAM's default
//     subnet when none are given), its /etc/hosts rewritten and its name
//     in weaveDNS, before the response reaches the client;
//   - die, destroy: its addresses go back to IPAM and its names are
//     tombstoned.
//
// See docs/docker.md.
package proxy
