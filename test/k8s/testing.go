package k8s

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var getOpts = metav1.GetOptions{}

// callTimeout bounds each API call the helpers make.
const callTimeout = 30 * time.Second

// Start starts a server for t and stops it at cleanup; on failure of t it
// logs the tail of the API server's log first. It fails t when the server
// cannot start.
func Start(t testing.TB) *Server { t.Helper(); return StartWithOptions(t, Options{}) }

// StartWithOptions is Start with the server placed by o.
func StartWithOptions(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := NewWithOptions(o)
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log tail:\n%s", s.LogTail("kube-apiserver", 40))
		}
		s.Stop()
	})
	return s
}

// Admin is a clientset authenticated as system:masters.
func (s *Server) Admin(t testing.TB) kubernetes.Interface {
	t.Helper()
	return s.Client(t, s.AdminConfig())
}

// Client is a clientset for cfg.
func (s *Server) Client(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("create client for %s: %v", cfg.Host, err)
	}
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return c
}

// ServiceAccountConfig creates ServiceAccount ns/name (and namespace ns)
// when missing and returns a rest.Config carrying a token of it from the
// TokenRequest API, valid for an hour. What it may do is what RBAC grants
// the ServiceAccount: apply the manifests' roles first.
func (s *Server) ServiceAccountConfig(t testing.TB, ns, name string) *rest.Config {
	t.Helper()
	admin := s.Admin(t)
	s.CreateNamespace(t, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx(t), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s/%s: %v", ns, name, err)
	}
	hour := int64(3600)
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &hour}}
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	return s.TokenConfig(tok.Status.Token)
}

// CreateNamespace creates namespace ns unless it exists.
func (s *Server) CreateNamespace(t testing.TB, ns string) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := s.Admin(t).CoreV1().Namespaces().Create(ctx(t), n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// WriteKubeconfig writes a kubeconfig file for cfg (server, CA, bearer
// token) into a test temp dir and returns its path, for KUBECONFIG or
// kubectl --kubeconfig.
func (s *Server) WriteKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfigFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl runs kubectl (KubectlPath) with --kubeconfig=kubeconfig and args,
// returning its combined output and error.
func (s *Server) Kubectl(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	path := KubectlPath()
	if path == "" {
		t.Fatalf("no kubectl: neither built by test/k8s/bins.sh into %s nor on PATH", filepath.Join(CacheDir(), "bin"))
	}
	args = append([]string{"--kubeconfig=" + kubeconfig}, args...)
	if s.opts.NetNS != "" {
		path, args = "ip", append([]string{"netns", "exec", s.opts.NetNS, path}, args...)
	}
	cmd := exec.CommandContext(ctx(t), path, args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// KubectlPath is the kubectl bins.sh built (the server's version), else
// the one on PATH, else "".
func KubectlPath() string {
	dir := os.Getenv("WEAVE_K8S_BINS")
	if dir == "" {
		dir = filepath.Join(CacheDir(), "bin")
	}
	if p := filepath.Join(dir, "kubectl"); isExecutable(p) {
		return p
	}
	p, _ := exec.LookPath("kubectl")
	return p
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// WriteKubeconfigFile writes a kubeconfig file for cfg's server, CA and
// bearer token (a child process's KUBECONFIG).
func WriteKubeconfigFile(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
