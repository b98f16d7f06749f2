package version

import (
	"regexp"
	"testing"
)

// semver is semver.org's grammar, simplified: core, pre-release, build.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func TestVersionIsSemantic(t *testing.T) {
	for _, c := range []struct{ build, rev, want string }{
		{"", "", "3.0.0-dev"},
		{"1a2b3c4d5e6f", "", "3.0.0-dev+1a2b3c4d5e6f"},
		{"", "0123456789ab.dirty", "3.0.0-dev+0123456789ab.dirty"},
		{"abc", "0123456789ab", "3.0.0-dev+abc"},
	} {
		if got := compute(c.build, c.rev); got != c.want || !semver.MatchString(got) {
			t.Errorf("compute(%q, %q) = %q, want %q (semantic)", c.build, c.rev, got, c.want)
		}
	}
	if !semver.MatchString(Version) {
		t.Errorf("Version %q is not a semantic version", Version)
	}
}
