package mesh

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	wmesh "github.com/weaveworks/mesh"
)

func writeHostFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The vectors are sha256("9oBJ0Jmip-" + machine-id + uuid)[:6] with the
// multicast bit cleared and the local bit set, computed outside Go
// (python3 hashlib): the derivation Weave Net 2.8.1 documents.
func TestSystemPeerNameVectors(t *testing.T) {
	const mid = "0123456789abcdef0123456789abcdef\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string
		used  int
	}{
		{"machine-id and DMI UUID", map[string]string{
			"etc/machine-id": mid, "sys/class/dmi/id/product_uuid": "4C4C4544-0042-3510-8052-B4C04F4E3132\n",
		}, "7a:08:99:b2:d1:f3", 2},
		{"machine-id only", map[string]string{"etc/machine-id": mid}, "0a:39:ab:6e:42:c6", 1},
		{"D-Bus id and hypervisor UUID (the fallbacks)", map[string]string{
			"var/lib/dbus/machine-id": "fedcba9876543210fedcba9876543210\n",
			"sys/hypervisor/uuid":     "ec2a1b2c-0000-1111-2222-333344445555\n",
		}, "06:3d:d4:01:3b:96", 2},
		{"systemd id wins over D-Bus's", map[string]string{
			"etc/machine-id": mid, "var/lib/dbus/machine-id": "ignored\n",
		}, "0a:39:ab:6e:42:c6", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, content := range c.files {
				writeHostFile(t, root, rel, content)
			}
			got, used, err := SystemPeerName(root)
			if err != nil || got.String() != c.want || len(used) != c.used {
				t.Fatalf("SystemPeerName = %v, %v, %v; want %s from %d files", got, used, err, c.want, c.used)
			}
			again, _, _ := SystemPeerName(root)
			if again != got {
				t.Fatalf("not stable: %v then %v", got, again)
			}
		})
	}
}

func TestSystemPeerNameNoIDs(t *testing.T) {
	root := t.TempDir()
	// A hostPath mount of a missing /etc/machine-id is an empty directory.
	if err := os.MkdirAll(filepath.Join(root, "etc", "machine-id"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := SystemPeerName(root)
	if !errors.Is(err, ErrNoSystemID) {
		t.Fatalf("want ErrNoSystemID, got %v", err)
	}
}

func TestLoadOrDerivePeerNamePersistsTheDerivedName(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	writeHostFile(t, root, "etc/machine-id", "0123456789abcdef0123456789abcdef\n")
	derive := func() (wmesh.PeerName, error) { n, _, err := SystemPeerName(root); return n, err }
	got, err := LoadOrDerivePeerName(dir, "", derive)
	if err != nil || got.String() != "0a:39:ab:6e:42:c6" {
		t.Fatalf("got %v, %v", got, err)
	}
	// A changed machine id later does not change the persisted name.
	writeHostFile(t, root, "etc/machine-id", "something else\n")
	again, err := LoadOrDerivePeerName(dir, "", derive)
	if err != nil || again != got {
		t.Fatalf("persisted name not kept: %v, %v", again, err)
	}
}
