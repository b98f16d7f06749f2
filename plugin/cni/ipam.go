package cni

import (
	"net/netip"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// ipamConf is weave-ipam's view of a network config: only the standard
// fields and "ipam" matter (the calling plugin owns the rest).
type ipamConf struct {
	types.PluginConf
	IPAM struct {
		IPAMConf
		DataDir  string `json:"dataDir,omitempty"`
		HTTPAddr string `json:"httpAddr,omitempty"`
	} `json:"ipam"`
}

// parseIPAMConf decodes weave-ipam's config; the address fields are
// validated as for weave-net.
func parseIPAMConf(data []byte) (*ipamConf, error) {
	conf := &ipamConf{}
	if err := decode(data, conf); err != nil {
		return nil, err
	}
	conf.IPAM.Type = "" // we are the IPAM plugin: parse our own fields
	if err := conf.IPAM.parse(); err != nil {
		return nil, err
	}
	if conf.IPAM.DataDir == "" {
		conf.IPAM.DataDir = defaultDataDir()
	}
	return conf, nil
}

func (c *ipamConf) store() store { return newStore(c.IPAM.DataDir, ipamPluginName, c.Name) }

// ipamAdd allocates one address for the container and returns it with
// the configured gateway and routes.
func (p *Plugin) ipamAdd(args *skel.CmdArgs) error {
	conf, err := parseIPAMConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.IPAM.HTTPAddr)
	st := conf.store()
	rec := newRecord(args.ContainerID, args.IfName, args.Netns)
	if err := st.save(rec); err != nil {
		return types.NewError(types.ErrIOFailure, err.Error(), "")
	}
	ctx, cancel := p.context()
	defer cancel()
	addr, err := p.allocate(ctx, rec.ident(), &conf.IPAM.IPAMConf)
	if err != nil {
		_ = st.remove(args.ContainerID, args.IfName)
		return err
	}
	rec.Addrs = []netip.Prefix{addr}
	if err := st.save(rec); err != nil {
		_ = p.release(ctx, rec.ident(), rec.Addrs)
		return types.NewError(types.ErrIOFailure, err.Error(), "")
	}
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion, DNS: conf.DNS}
	ipc := &current.IPConfig{Address: *prefixIPNet(addr)}
	gw := conf.IPAM.gateway
	if gw.IsValid() {
		ipc.Gateway = gw.AsSlice()
	}
	res.IPs = []*current.IPConfig{ipc}
	for _, r := range conf.IPAM.routes {
		if !r.gw.IsValid() {
			r.gw = gw
		}
		res.Routes = append(res.Routes, resultRoutes([]route{r})...)
	}
	return types.PrintResult(res, conf.CNIVersion)
}

// ipamDel releases what ADD allocated (every address of the attachment's
// ident when there is no record); unknown containers are success.
func (p *Plugin) ipamDel(args *skel.CmdArgs) error {
	conf, err := parseIPAMConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.IPAM.HTTPAddr)
	st := conf.store()
	rec, _, _ := st.loadOrNew(args.ContainerID, args.IfName, args.Netns)
	ctx, cancel := p.context()
	defer cancel()
	if err := p.release(ctx, rec.ident(), rec.Addrs); err != nil {
		return err
	}
	return st.remove(args.ContainerID, args.IfName)
}

// ipamCheck verifies IPAM still holds prevResult's addresses.
func (p *Plugin) ipamCheck(args *skel.CmdArgs) error {
	conf, err := parseIPAMConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.IPAM.HTTPAddr)
	prev, err := prevResult(&conf.PluginConf)
	if err != nil {
		return err
	}
	rec, _, _ := conf.store().loadOrNew(args.ContainerID, args.IfName, args.Netns)
	ctx, cancel := p.context()
	defer cancel()
	return p.checkIPAM(ctx, rec, prev)
}

// ipamGC releases the recorded addresses of attachments not listed valid.
func (p *Plugin) ipamGC(args *skel.CmdArgs) error {
	conf, err := parseIPAMConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.IPAM.HTTPAddr)
	if !gcRequested(args.StdinData) {
		return nil
	}
	ctx, cancel := p.context()
	defer cancel()
	return p.gc(ctx, conf.store(), conf.ValidAttachments)
}

// ipamStatus: the router answers and has IPAM.
func (p *Plugin) ipamStatus(args *skel.CmdArgs) error {
	conf, err := parseIPAMConf(args.StdinData)
	if err != nil {
		return err
	}
	return p.at(conf.IPAM.HTTPAddr).routerStatus()
}
