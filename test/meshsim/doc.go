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
package meshsim
