package sleeve

// Diagnostics is the sleeve overlay's status.
type Diagnostics struct {
	Port           int
	RxUnknownPeer  uint64 // datagrams from unknown or unconfirmed senders
	RxGarbage      uint64 // datagrams too short to name a sender
	RxSocketErrors uint64
	Peers          []PeerDiagnostics
}

// PeerDiagnostics is the status of one forwarder.
type PeerDiagnostics struct {
	Peer         string // remote peer name
	ConnUID      uint64
	Outbound     bool
	Encrypted    bool
	Cipher       string // "secretbox" (Weave's), "aes256gcm" or "chacha20poly1305"; "" in plaintext
	Confirmed    bool
	Established  bool
	StackFrag    bool   // the network reassembles fragmented UDP
	MTU          int    // overlay MTU (largest inner IP packet); JumboMTU when Jumbo
	PeerJumbo    bool   // both ends offer jumbo framing (JumboFeature)
	Jumbo        bool   // jumbo framing in use (PeerJumbo and StackFrag)
	PeerSegments bool   // both ends offer segmented framing (SegmentsFeature)
	Segments     bool   // segmented framing in use (PeerSegments, path MTU verified, GSO sends work)
	RemoteAddr   string // remote UDP address; "" while unknown
	Counters     Counters
}

// Counters are a forwarder's statistics.
type Counters struct {
	TxFrames, TxDatagrams, TxErrors, TxDropped, TooBig, Fragments, Segments uint64
	RxFrames, RxDatagrams, RxDropped, RxReplays, RxAuthFailed               uint64
	// TxBytes and RxBytes are the UDP payload bytes of the datagrams sent
	// to and received from the peer (sleeve headers, encryption overhead
	// and heartbeats included; the outer IP/UDP headers not).
	TxBytes, RxBytes uint64
}

// Diagnostics implements router.Overlay; it returns a Diagnostics.
func (o *Overlay) Diagnostics() any { return o.Status() }

// Status returns a typed snapshot of the overlay.
func (o *Overlay) Status() Diagnostics {
	d := Diagnostics{
		Port:           o.socks.port,
		RxUnknownPeer:  o.rxUnknown.Load(),
		RxGarbage:      o.rxGarbage.Load(),
		RxSocketErrors: o.rxErrors.Load(),
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	for f := range o.mu.all {
		d.Peers = append(d.Peers, f.diagnostics())
	}
	return d
}

func (f *forwarder) diagnostics() PeerDiagnostics {
	d := PeerDiagnostics{
		Peer:         f.remote.String(),
		ConnUID:      f.params.ConnUID,
		Outbound:     f.params.Outbound,
		Encrypted:    f.params.SessionKey != nil,
		Confirmed:    f.confirmed.Load(),
		Established:  f.established.Load(),
		StackFrag:    f.stackFrag.Load(),
		MTU:          f.overlayMTU(),
		PeerJumbo:    f.peerJumbo,
		Jumbo:        f.jumbo.Load(),
		PeerSegments: f.peerSeg,
		Segments:     f.seg.Load(),
	}
	if d.Encrypted {
		d.Cipher = f.cipher.String()
	}
	if ap := f.remoteAddr.Load(); ap != nil {
		d.RemoteAddr = ap.String()
	}
	c := &f.cnt
	d.Counters = Counters{
		TxFrames: c.TxFrames.Load(), TxDatagrams: c.TxDatagrams.Load(), TxErrors: c.TxErrors.Load(),
		TxDropped: c.TxDropped.Load(), TooBig: c.TooBig.Load(), Fragments: c.Fragments.Load(), Segments: c.Segments.Load(),
		RxFrames: c.RxFrames.Load(), RxDatagrams: c.RxDatagrams.Load(), RxDropped: c.RxDropped.Load(),
		RxReplays: c.RxReplays.Load(), RxAuthFailed: c.RxAuthFailed.Load(),
		TxBytes: c.TxBytes.Load(), RxBytes: c.RxBytes.Load(),
	}
	return d
}
