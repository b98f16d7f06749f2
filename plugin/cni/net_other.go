//go:build !linux

package cni

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

var errNotLinux = types.NewError(types.ErrPluginNotAvailable, "weave-net only runs on Linux", "")

func (p *Plugin) netAdd(*skel.CmdArgs) error    { return errNotLinux }
func (p *Plugin) netDel(*skel.CmdArgs) error    { return errNotLinux }
func (p *Plugin) netCheck(*skel.CmdArgs) error  { return errNotLinux }
func (p *Plugin) netGC(*skel.CmdArgs) error     { return errNotLinux }
func (p *Plugin) netStatus(*skel.CmdArgs) error { return errNotLinux }
