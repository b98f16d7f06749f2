package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a throw-away certificate authority for TLS tests.
type CA struct {
	t    testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	Pool *x509.CertPool
	PEM  []byte
}

// NewCA makes a CA valid for an hour around now.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca := &CA{t: t, Pool: x509.NewCertPool()}
	tmpl := certTemplate("test CA")
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	ca.key = newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ca.cert, _ = x509.ParseCertificate(der)
	ca.Pool.AddCert(ca.cert)
	ca.PEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return ca
}

// Issue signs a server and client certificate for name (an IP address
// also goes into the SANs) and returns it with its PEM forms.
func (ca *CA) Issue(name string) (cert tls.Certificate, certPEM, keyPEM []byte) {
	ca.t.Helper()
	tmpl := certTemplate(name)
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	key := newKey(ca.t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		ca.t.Fatal(err)
	}
	return cert, certPEM, keyPEM
}

// WriteFiles writes ca.pem and, for each name, <prefix>cert.pem and
// <prefix>key.pem into dir (Docker's DOCKER_CERT_PATH layout for prefix "").
func (ca *CA) WriteFiles(dir string, names map[string]string) {
	ca.t.Helper()
	write := func(f string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			ca.t.Fatal(err)
		}
	}
	write("ca.pem", ca.PEM)
	for prefix, name := range names {
		_, c, k := ca.Issue(name)
		write(prefix+"cert.pem", c)
		write(prefix+"key.pem", k)
	}
}

func certTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
