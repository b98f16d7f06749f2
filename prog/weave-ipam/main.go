// Command weave-ipam is weave's CNI IPAM plugin: it hands out addresses
// from the weave router's IPAM to other network plugins (see docs/cni.md).
package main

import (
	"github.com/containernetworking/cni/pkg/skel"

	"github.com/seedf75a49c6/weave/plugin/cni"
)

func main() {
	skel.PluginMainFuncs(cni.NewFromEnv().IPAMFuncs(), cni.Versions, cni.About("weave-ipam"))
}
