package k8s

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// writeKeys writes the token file (one admin in system:masters) and the
// ServiceAccount token signing key pair into dir.
func writeKeys(dir, adminToken string) error {
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", adminToken)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate ServiceAccount signing key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encode ServiceAccount public key: %w", err)
	}
	files := map[string]*pem.Block{
		"sa.key": {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)},
		"sa.pub": {Type: "PUBLIC KEY", Bytes: pub},
	}
	for name, block := range files {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
