// Package meshsim is an in-process multi-peer harness for tests: N real
// github.com/weaveworks/mesh routers on 127.0.0.1 random ports, each with a
// router.NetworkRouter whose overlay is an in-memory FakeOverlay and whose
// bridge is a recording Injector. Frames travel synchronously between
// peers' routers, so tests need no sleeps after sending a frame; topology
// convergence is awaited by polling mesh routes against a deadline.
//
// Typical use:
//
//	s := meshsim.New(t, 3, meshsim.Options{})
//	s.Connect(t, 0, 1); s.Connect(t, 1, 2)
//	s.AwaitConverged(t)
//	s.Peers[0].Router.HandleCaptured(frame)
//	// inspect s.Net.Deliveries(), s.Peers[2].Injector.Frames()
//	s.Cut(1, 2); s.AwaitConverged(t)
//
// For scale and failure runs, Options.Loopback gives every peer its own
// address 127.A.x.y with one shared port (so mesh's peer discovery works),
// and Options.Liveness / IPAM / ReclaimAfter add a liveness detector, an
// IPAM allocator and a reclaimer per peer, Options.Sleeve the real sleeve
// overlay instead of the fake one (so a real weaver can join); Kill makes
// a peer vanish as SIGKILL does (its mesh closes listener and
// connections); SpreadTargets builds the sparse overlay of the scale runs;
// TopologyProblem, LivenessProblem and RingProblem with Await measure
// convergence (scale_test.go, test/scale.sh).
package meshsim
