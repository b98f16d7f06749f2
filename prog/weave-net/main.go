// Command weave-net is weave's CNI network plugin: it attaches a
// container to the weave bridge with an address from the weave router's
// IPAM (see docs/cni.md). Runtimes execute it with the CNI_* environment
// and the network config on stdin.
package main

import (
	"github.com/containernetworking/cni/pkg/skel"

	"github.com/seedf75a49c6/weave/plugin/cni"
)

func main() {
	skel.PluginMainFuncs(cni.NewFromEnv().NetFuncs(), cni.Versions, cni.About("weave-net"))
}
