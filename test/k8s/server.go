package k8s

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"k8s.io/client-go/rest"
)

// StartTimeout bounds how long New waits for etcd and the API server.
const StartTimeout = 90 * time.Second

// Server is a running etcd + kube-apiserver pair.
type Server struct {
	URL        string // https://127.0.0.1:<port>
	AdminToken string // bearer token of user "admin" in group system:masters
	CAData     []byte // the API server's self-signed serving certificate (PEM)
	Dir        string // data, certificates, keys and logs

	opts            Options
	etcd, apiserver *exec.Cmd
}

// Options place the server. The zero value is loopback in the test's own
// network namespace.
type Options struct {
	// NetNS runs etcd and kube-apiserver inside this named network
	// namespace (as `ip netns exec`), so programs in namespace hosts can
	// reach it over their underlay. The test's own clients (Admin, Client,
	// Kubectl) then dial from inside that namespace.
	NetNS string
	// Address is the API server's bind and advertise address (default
	// 127.0.0.1); with NetNS, an address of that namespace.
	Address string
	// Cluster configures the server for a cluster with kubelets, a
	// controller-manager and pods (test/cluster): the ServiceAccount
	// admission plugin on (pods get tokens), the kubernetes Service's
	// endpoints kept (Address must not be loopback), and the kubelets
	// reached at their InternalIP. ExtraArgs are more flags.
	Cluster   bool
	ExtraArgs []string
}

// New starts etcd and kube-apiserver on free loopback ports, with
// data in a new temporary directory. Call Stop when done (Start does that
// for a test). For TestMain, where there is no *testing.T.
func New() (*Server, error) { return NewWithOptions(Options{}) }

// NewWithOptions is New with the server placed by o.
func NewWithOptions(o Options) (*Server, error) {
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	bins, err := FindBins()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weave-k8s-")
	if err != nil {
		return nil, fmt.Errorf("create server dir: %w", err)
	}
	s := &Server{Dir: dir, AdminToken: randomToken(), opts: o}
	if err := s.start(bins); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(bins Bins) error {
	if err := writeKeys(s.Dir, s.AdminToken); err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if s.etcd, err = s.launch("etcd", bins.Etcd, etcdArgs(s.Dir, etcdURL, ports[1])); err != nil {
		return err
	}
	s.URL = "https://" + net.JoinHostPort(s.opts.Address, strconv.Itoa(ports[2]))
	if s.apiserver, err = s.launch("kube-apiserver", bins.APIServer, apiserverArgs(s.Dir, etcdURL, s.opts, ports[2])); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		return fmt.Errorf("%w\n--- kube-apiserver log tail:\n%s\n--- etcd log tail:\n%s",
			err, s.LogTail("kube-apiserver", 30), s.LogTail("etcd", 10))
	}
	return s.trustServingCert(ctx)
}

// trustServingCert switches clients from skipping TLS verification (while
// the API server had not written its certificate) to verifying it.
func (s *Server) trustServingCert(ctx context.Context) error {
	ca, err := readCA(s.Dir)
	if err != nil {
		return err
	}
	s.CAData = ca
	c, err := kubernetes.NewForConfig(s.AdminConfig())
	if err == nil {
		_, err = c.CoreV1().Namespaces().Get(ctx, "kube-system", getOpts)
	}
	if err != nil {
		return fmt.Errorf("verify the API server with its certificate %s: %w", filepath.Join(s.Dir, "certs", "apiserver.crt"), err)
	}
	return nil
}

func etcdArgs(dir, clientURL string, peerPort int) []string {
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	}
}

func apiserverArgs(dir, etcdURL string, o Options, port int) []string {
	addr := o.Address
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + addr, "--advertise-address=" + addr,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true", // as every real cluster that runs a CNI DaemonSet
		"--v=0",
	}
	if o.Cluster {
		args = append(args, "--kubelet-preferred-address-types=InternalIP,Hostname")
	} else {
		args = append(args,
			"--endpoint-reconciler-type=none", // v1.37 refuses a loopback advertise address otherwise
			"--disable-admission-plugins=ServiceAccount")
	}
	return append(args, o.ExtraArgs...)
}

// launch starts one binary with its output in <Dir>/<name>.log. It dies
// with the test process (Pdeathsig) should Stop never run.
func (s *Server) launch(name, path string, args []string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(s.Dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	defer log.Close()
	if s.opts.NetNS != "" {
		path, args = "ip", append([]string{"netns", "exec", s.opts.NetNS, path}, args...)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

// waitReady polls /readyz (an external process has no event to wait on),
// then waits for namespace kube-system, which appears just after.
func (s *Server) waitReady(ctx context.Context) error {
	c, err := kubernetes.NewForConfig(s.AdminConfig())
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	var last error
	for {
		if last = s.exited(); last != nil {
			return last
		}
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		last = fmt.Errorf("GET /readyz: %w: %s", err, body)
		if err == nil {
			_, err = c.CoreV1().Namespaces().Get(ctx, "kube-system", getOpts)
			last = fmt.Errorf("get namespace kube-system: %w", err)
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver at %s not ready after %v: %w", s.URL, StartTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exited reports an error if etcd or kube-apiserver has died.
func (s *Server) exited() error {
	for name, c := range map[string]*exec.Cmd{"etcd": s.etcd, "kube-apiserver": s.apiserver} {
		if c == nil || c.Process == nil {
			continue
		}
		var st syscall.WaitStatus
		if pid, _ := syscall.Wait4(c.Process.Pid, &st, syscall.WNOHANG, nil); pid == c.Process.Pid {
			c.Process = nil
			return fmt.Errorf("%s exited (%v)", name, st)
		}
	}
	return nil
}

// Stop terminates the API server, then etcd, and removes Dir.
func (s *Server) Stop() {
	for _, c := range []*exec.Cmd{s.apiserver, s.etcd} {
		stopProcess(c)
	}
	if s.Dir != "" {
		_ = os.RemoveAll(s.Dir)
	}
}

// stopProcess sends SIGTERM, and SIGKILL after 15 s (an open watch slows
// the API server's shutdown).
func stopProcess(c *exec.Cmd) {
	if c == nil || c.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	_ = c.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}

// AdminConfig is a rest.Config for user "admin" (group system:masters).
func (s *Server) AdminConfig() *rest.Config {
	return s.TokenConfig(s.AdminToken)
}

// TokenConfig is a rest.Config for the server with the given bearer token.
func (s *Server) TokenConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData, Insecure: len(s.CAData) == 0},
		QPS:             100,
		Burst:           200,
		Dial:            s.dial,
	}
}

// dial connects from inside Options.NetNS when set: a socket stays in the
// namespace it was created in, whatever thread uses it later.
func (s *Server) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if s.opts.NetNS == "" {
		return d.DialContext(ctx, network, addr)
	}
	var conn net.Conn
	err := netns.Do(filepath.Join("/var/run/netns", s.opts.NetNS), func() error {
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// LogTail returns the last n lines of etcd's or kube-apiserver's log.
func (s *Server) LogTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(s.Dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	return netnstest.Tail(string(b), n)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoCA is returned while the API server has not written its certificate.
var errNoCA = errors.New("no serving certificate yet")

// readCA loads the self-signed serving certificate from the cert dir.
func readCA(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, "certs", "apiserver.crt"))
	if err != nil || !bytes.Contains(b, []byte("CERTIFICATE")) {
		return nil, errNoCA
	}
	return b, nil
}
