package dns

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mdns "github.com/miekg/dns"
)

const (
	// DefaultTTL is the TTL of our answers (--dns-ttl), in seconds.
	DefaultTTL = 1
	// DefaultFallbackTimeout bounds one upstream query (--dns-fallback-timeout).
	DefaultFallbackTimeout = 5 * time.Second
	// DefaultResolvConf is where upstream servers come from (--resolv-conf).
	DefaultResolvConf = "/etc/resolv.conf"
	// upstreamUDPSize is the EDNS0 buffer we advertise upstream.
	upstreamUDPSize = 4096
	reverseZone     = "in-addr.arpa."
)

// Zone is what the server answers from; *Nameserver implements it.
type Zone interface {
	Domain() string
	Lookup(name string) []netip.Addr
	ReverseLookup(addr netip.Addr) (string, bool)
}

// ServerConfig configures a Server.
type ServerConfig struct {
	ListenAddr      string        // host:port for UDP and TCP; port 0 = any (tests)
	TTL             uint32        // answer TTL; 0 = DefaultTTL
	ResolvConf      string        // upstream servers; "" = none
	Upstream        []string      // host:port upstreams used instead of ResolvConf when set
	FallbackTimeout time.Duration // per upstream query; 0 = DefaultFallbackTimeout
	Logger          *slog.Logger
}

// Server answers DNS over UDP and TCP: our names from the Zone, the rest
// from the upstream servers of resolv.conf.
type Server struct {
	zone     Zone
	cfg      ServerConfig
	log      *slog.Logger
	upstream []string
	udp, tcp *mdns.Server
	addr     string
	wg       sync.WaitGroup
}

// NewServer reads the upstream servers; Start binds.
func NewServer(zone Zone, cfg ServerConfig) (*Server, error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.FallbackTimeout <= 0 {
		cfg.FallbackTimeout = DefaultFallbackTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{zone: zone, cfg: cfg, log: cfg.Logger.With("component", "dns")}
	if _, _, err := net.SplitHostPort(cfg.ListenAddr); err != nil {
		return nil, fmt.Errorf("--dns-listen-address %q: %w", cfg.ListenAddr, err)
	}
	s.upstream = cfg.Upstream
	if len(s.upstream) == 0 {
		up, err := upstreams(cfg.ResolvConf, cfg.ListenAddr)
		if err != nil {
			return nil, err
		}
		s.upstream = up
	}
	return s, nil
}

// upstreams reads resolv.conf's name servers, leaving out our own listen
// address (and, when we listen on every address, loopback ones on our
// port), so we never forward to ourselves.
func upstreams(path, listen string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	cc, err := mdns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read upstream DNS servers from %s: %w", path, err)
	}
	lhost, lport, _ := net.SplitHostPort(listen)
	lip, _ := netip.ParseAddr(lhost)
	var out []string
	for _, srv := range cc.Servers {
		ip, err := netip.ParseAddr(srv)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		self := cc.Port == lport && (ip == lip || (lip.IsUnspecified() && ip.IsLoopback()))
		if !self {
			out = append(out, net.JoinHostPort(ip.String(), cc.Port))
		}
	}
	return out, nil
}

// Upstream returns the servers queries outside our names go to.
func (s *Server) Upstream() []string { return append([]string(nil), s.upstream...) }

// Addr is the bound address (host:port), valid after Start.
func (s *Server) Addr() string { return s.addr }

// TTL is the TTL of our answers.
func (s *Server) TTL() uint32 { return s.cfg.TTL }

// listenUDPAndTCP binds UDP and then TCP on the same port of addr. With
// port 0 the kernel picks the UDP port, whose TCP twin may be taken by
// someone else: then it tries again with another port, a few times.
func listenUDPAndTCP(addr string) (net.PacketConn, net.Listener, error) {
	host, want, _ := net.SplitHostPort(addr)
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("weaveDNS listen on udp %s: %w", addr, err)
		}
		tcpAddr := net.JoinHostPort(host, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port))
		ln, err := net.Listen("tcp", tcpAddr)
		if err == nil {
			return pc, ln, nil
		}
		_ = pc.Close()
		if want != "0" || !errors.Is(err, syscall.EADDRINUSE) || attempt == 9 {
			return nil, nil, fmt.Errorf("weaveDNS listen on tcp %s: %w", tcpAddr, err)
		}
	}
}

// Start binds UDP and TCP on the listen address and serves until Stop.
func (s *Server) Start() error {
	pc, ln, err := listenUDPAndTCP(s.cfg.ListenAddr)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(s.cfg.ListenAddr)
	s.addr = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	mux := mdns.NewServeMux()
	mux.HandleFunc(s.zone.Domain(), s.serveLocal)
	mux.HandleFunc(reverseZone, s.serveReverse)
	mux.HandleFunc(".", s.serveOther)
	s.udp = &mdns.Server{PacketConn: pc, Handler: mux}
	s.tcp = &mdns.Server{Listener: ln, Handler: mux}
	for _, srv := range []*mdns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.ActivateAndServe(); err != nil {
				s.log.Error("weaveDNS server stopped", "err", err)
			}
		}()
		<-started
	}
	s.log.Info("weaveDNS listening", "addr", s.addr, "domain", s.zone.Domain(), "upstream", s.upstream)
	return nil
}

// Stop closes both listeners and waits for the servers.
func (s *Server) Stop() {
	for _, srv := range []*mdns.Server{s.udp, s.tcp} {
		if srv != nil {
			_ = srv.Shutdown()
		}
	}
	s.wg.Wait()
}

// serveLocal answers names in our domain: A from the zone, NOERROR with no
// answer for other types of a known name, NXDOMAIN for unknown names.
func (s *Server) serveLocal(w mdns.ResponseWriter, req *mdns.Msg) {
	if len(req.Question) != 1 {
		s.fail(w, req, mdns.RcodeFormatError)
		return
	}
	q := req.Question[0]
	if mdns.CanonicalName(q.Name) == s.zone.Domain() { // the zone apex exists, holding only its SOA
		m := s.reply(req)
		if q.Qtype == mdns.TypeSOA || q.Qtype == mdns.TypeANY {
			m.Answer = []mdns.RR{s.soa()}
		} else {
			m.Ns = []mdns.RR{s.soa()}
		}
		s.write(w, req, m)
		return
	}
	s.answerName(w, req, q.Name, s.zone.Lookup(q.Name))
}

func (s *Server) answerName(w mdns.ResponseWriter, req *mdns.Msg, name string, addrs []netip.Addr) {
	q := req.Question[0]
	m := s.reply(req)
	if len(addrs) == 0 {
		m.Rcode = mdns.RcodeNameError
		m.Ns = []mdns.RR{s.soa()}
		s.write(w, req, m)
		return
	}
	if q.Qtype != mdns.TypeA && q.Qtype != mdns.TypeANY {
		m.Ns = []mdns.RR{s.soa()} // NODATA: the name exists, not with this type
		s.write(w, req, m)
		return
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	for _, a := range addrs {
		m.Answer = append(m.Answer, &mdns.A{Hdr: s.hdr(name, mdns.TypeA), A: a.AsSlice()})
	}
	s.write(w, req, m)
}

// serveReverse answers PTR for our addresses and forwards the rest.
func (s *Server) serveReverse(w mdns.ResponseWriter, req *mdns.Msg) {
	if len(req.Question) != 1 {
		s.fail(w, req, mdns.RcodeFormatError)
		return
	}
	q := req.Question[0]
	if q.Qtype == mdns.TypePTR {
		if ip, ok := reverseAddr(q.Name); ok {
			if host, ok := s.zone.ReverseLookup(ip); ok {
				m := s.reply(req)
				m.Answer = []mdns.RR{&mdns.PTR{Hdr: s.hdr(q.Name, mdns.TypePTR), Ptr: host}}
				s.write(w, req, m)
				return
			}
		}
	}
	s.forward(w, req)
}

// serveOther qualifies single-label names with our domain when we know
// them; everything else goes upstream.
func (s *Server) serveOther(w mdns.ResponseWriter, req *mdns.Msg) {
	if len(req.Question) == 1 {
		q := req.Question[0]
		if mdns.CountLabel(q.Name) == 1 {
			if addrs := s.zone.Lookup(q.Name + s.zone.Domain()); len(addrs) > 0 {
				s.answerName(w, req, q.Name, addrs)
				return
			}
		}
	}
	s.forward(w, req)
}

// reverseAddr parses d.c.b.a.in-addr.arpa. (any case).
func reverseAddr(name string) (netip.Addr, bool) {
	name = mdns.CanonicalName(name)
	rest, ok := strings.CutSuffix(name, "."+reverseZone)
	if !ok {
		return netip.Addr{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return netip.Addr{}, false
		}
		b[3-i] = byte(v)
	}
	return netip.AddrFrom4(b), true
}

// forward relays the query to each upstream in turn; SERVFAIL if none answers.
func (s *Server) forward(w mdns.ResponseWriter, req *mdns.Msg) {
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	c := &mdns.Client{Net: proto, UDPSize: upstreamUDPSize, Timeout: s.cfg.FallbackTimeout}
	up := req.Copy()
	if proto == "udp" && up.IsEdns0() == nil {
		up.SetEdns0(upstreamUDPSize, false)
	}
	var errs []error
	for _, srv := range s.upstream {
		resp, _, err := c.Exchange(up, srv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp.Id = req.Id
		if req.IsEdns0() == nil { // do not hand the client an OPT it did not ask for
			stripOPT(resp)
		}
		s.write(w, req, resp)
		return
	}
	if len(s.upstream) > 0 {
		s.log.Debug("no upstream DNS server answered", "name", req.Question, "err", errors.Join(errs...))
	}
	s.fail(w, req, mdns.RcodeServerFailure)
}

func stripOPT(m *mdns.Msg) {
	extra := m.Extra[:0]
	for _, rr := range m.Extra {
		if rr.Header().Rrtype != mdns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	m.Extra = extra
}

func (s *Server) reply(req *mdns.Msg) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = true
	return m
}

func (s *Server) hdr(name string, t uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: s.cfg.TTL}
}

func (s *Server) soa() mdns.RR {
	d := s.zone.Domain()
	return &mdns.SOA{Hdr: s.hdr(d, mdns.TypeSOA), Ns: "ns." + d, Mbox: "hostmaster." + d,
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: s.cfg.TTL}
}

func (s *Server) fail(w mdns.ResponseWriter, req *mdns.Msg, rcode int) {
	m := new(mdns.Msg)
	m.SetRcode(req, rcode)
	m.RecursionAvailable = true
	s.write(w, req, m)
}

// write sends m, truncated to what the client can take: 512 bytes over
// UDP, or its EDNS0 buffer size (then echoing an OPT record); 64 KiB over TCP.
func (s *Server) write(w mdns.ResponseWriter, req *mdns.Msg, m *mdns.Msg) {
	size := mdns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		size = max(int(opt.UDPSize()), mdns.MinMsgSize)
		if m.IsEdns0() == nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
	}
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		size = mdns.MaxMsgSize
	}
	m.Truncate(size)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("cannot write DNS reply", "to", w.RemoteAddr().String(), "err", err)
	}
}
