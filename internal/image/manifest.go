package image

import (
	"fmt"
	"regexp"
)

var imageLine = regexp.MustCompile(`(?m)^(\s*(?:- )?image:\s*)\S+\s*$`)

// SetManifestImage is manifest (YAML) with every `image:` value replaced by
// ref and nothing else changed; it fails when there is none.
func SetManifestImage(manifest []byte, ref string) ([]byte, error) {
	if !imageLine.Match(manifest) {
		return nil, fmt.Errorf("image: no \"image:\" line in the manifest")
	}
	return imageLine.ReplaceAll(manifest, []byte("${1}"+ref)), nil
}
