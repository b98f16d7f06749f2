package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TargetsFileName holds the persisted connection targets in the data dir,
// one host[:port] per line; --resume reconnects to them.
const TargetsFileName = "targets"

// SaveTargets atomically replaces dataDir/targets with targets.
func SaveTargets(dataDir string, targets []string) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, TargetsFileName)
	var b strings.Builder
	for _, t := range targets {
		b.WriteString(t)
		b.WriteString("\n")
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write targets %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename targets %s: %w", path, err)
	}
	return nil
}

// LoadTargets returns the persisted targets; none (and no error) when the
// file does not exist.
func LoadTargets(dataDir string) ([]string, error) {
	path := filepath.Join(dataDir, TargetsFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read targets %s: %w", path, err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out, nil
}
