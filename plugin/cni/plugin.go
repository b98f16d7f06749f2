package cni

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/seedf75a49c6/weave/internal/api"
)

// Versions are the CNI spec versions both plugins speak: 1.1.0 natively,
// the older ones through the CNI library's result conversion.
var Versions = version.All

// Plugin names, also the sub-directories of dataDir.
const (
	netPluginName  = "weave-net"
	ipamPluginName = "weave-ipam"
)

// DefaultTimeout bounds one plugin invocation's calls to the router
// (an allocation may wait for IPAM consensus).
const DefaultTimeout = 90 * time.Second

// ErrDrift is the plugin-specific error code CHECK returns when the
// container's interface, addresses or routes differ from prevResult.
const ErrDrift uint = 100

// Plugin holds what one invocation needs.
type Plugin struct {
	API     *api.Client
	Timeout time.Duration
}

// NewFromEnv returns a Plugin talking to WEAVE_HTTP_ADDR (default
// 127.0.0.1:6784).
func NewFromEnv() *Plugin {
	return &Plugin{API: api.NewClient(api.Config{Addr: os.Getenv("WEAVE_HTTP_ADDR")}), Timeout: DefaultTimeout}
}

// at returns p talking to addr instead (the config's httpAddr, which
// beats $WEAVE_HTTP_ADDR: kubelet passes plugins no environment), or p
// itself when addr is empty.
func (p *Plugin) at(addr string) *Plugin {
	if addr == "" {
		return p
	}
	q := *p
	q.API = api.NewClient(api.Config{Addr: addr})
	return &q
}

// About is the text the plugins print when run without CNI_COMMAND.
func About(name string) string {
	return name + ": weave's CNI plugin (github.com/seedf75a49c6/weave); talks to the weave router at $WEAVE_HTTP_ADDR (default " + api.DefaultAddr + ")"
}

// NetFuncs are weave-net's verbs for skel.PluginMainFuncs.
func (p *Plugin) NetFuncs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: p.netAdd, Del: p.netDel, Check: p.netCheck, GC: p.netGC, Status: p.netStatus}
}

// IPAMFuncs are weave-ipam's verbs for skel.PluginMainFuncs.
func (p *Plugin) IPAMFuncs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: p.ipamAdd, Del: p.ipamDel, Check: p.ipamCheck, GC: p.ipamGC, Status: p.ipamStatus}
}

func (p *Plugin) context() (context.Context, context.CancelFunc) {
	t := p.Timeout
	if t == 0 {
		t = DefaultTimeout
	}
	return context.WithTimeout(context.Background(), t)
}

// routerError turns an API error into a CNI error object.
func (p *Plugin) routerError(what string, err error) error {
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	if api.IsNotRunning(err) {
		return types.NewError(types.ErrTryAgainLater,
			fmt.Sprintf("%s: no weave router answers at %s: is weave running? start it with `weave launch`", what, p.API.Addr()),
			err.Error())
	}
	switch code := api.StatusCode(err); {
	case code == 404:
		return types.NewError(types.ErrPluginNotAvailable,
			fmt.Sprintf(`%s: the weave router at %s runs without IPAM (--ipalloc-range ""); give ipam.type another IPAM plugin`, what, p.API.Addr()),
			err.Error())
	case code == 400:
		return types.NewError(types.ErrInvalidNetworkConfig, what+": the router refused it: "+err.Error(), "")
	case code == 503:
		return types.NewError(types.ErrTryAgainLater, what+": the router's IPAM is not ready: "+err.Error(), "")
	case errors.Is(err, context.DeadlineExceeded):
		return types.NewError(types.ErrTryAgainLater, what+": the router did not answer in time: "+err.Error(), "")
	}
	return types.NewError(types.ErrInternal, what+": "+err.Error(), "")
}

// allocate gets one address for containerID from the router's IPAM.
func (p *Plugin) allocate(ctx context.Context, containerID string, c *IPAMConf) (netip.Prefix, error) {
	addr, err := p.API.AllocateIP(ctx, containerID, c.subnet)
	if err != nil {
		what := "allocate an address for container " + containerID
		if c.subnet.IsValid() {
			what += " in ipam.subnet " + c.subnet.String()
		}
		return netip.Prefix{}, p.routerError(what, err)
	}
	return addr, nil
}

// release gives back addrs of containerID, or all of its addresses when
// addrs is empty. An ident IPAM does not know is not an error.
func (p *Plugin) release(ctx context.Context, containerID string, addrs []netip.Prefix) error {
	if len(addrs) == 0 {
		return p.releaseOne(ctx, containerID, netip.Addr{})
	}
	var errs []error
	for _, a := range addrs {
		errs = append(errs, p.releaseOne(ctx, containerID, a.Addr()))
	}
	return errors.Join(errs...)
}

func (p *Plugin) releaseOne(ctx context.Context, containerID string, a netip.Addr) error {
	err := p.API.ReleaseIP(ctx, containerID, a)
	if err == nil || api.StatusCode(err) == 404 || api.IsNotHeld(err) {
		return nil
	}
	what := "release the addresses of container " + containerID
	if a.IsValid() {
		what = "release address " + a.String() + " of container " + containerID
	}
	return p.routerError(what, err)
}

// ipamStatus is STATUS for our own IPAM: the router answers and has IPAM.
func (p *Plugin) routerStatus() error {
	ctx, cancel := p.context()
	defer cancel()
	body, err := p.API.Status(ctx, "")
	if err != nil {
		return p.unavailable(err)
	}
	if _, err := p.API.DefaultSubnet(ctx); err != nil {
		return p.unavailable(err)
	}
	if state := ipamState(body); !ipamUsable(state) {
		return types.NewError(types.ErrPluginNotAvailable,
			fmt.Sprintf("the IPAM of the weave router at %s is not ready: %s", p.API.Addr(), state),
			"`weave status ipam` shows the ring and what it waits for")
	}
	return nil
}

// ipamState is the "Status:" line of the ipam section of GET /status
// ("" when there is none).
func ipamState(status string) string {
	inIPAM := false
	for _, line := range strings.Split(status, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case !ok:
		case key == "Service":
			inIPAM = strings.TrimSpace(val) == "ipam"
		case key == "Status" && inIPAM:
			return strings.TrimSpace(val)
		}
	}
	return ""
}

// ipamUsable: ready, or idle (consensus starts with the first request, so
// an idle ring must not keep runtimes from sending it).
func ipamUsable(state string) bool {
	return state == "" || state == "ready" || state == "idle"
}

func (p *Plugin) unavailable(err error) error {
	msg := fmt.Sprintf("the weave router at %s is not ready: %v", p.API.Addr(), err)
	switch {
	case api.IsNotRunning(err):
		msg = fmt.Sprintf("no weave router answers at %s: is weave running? start it with `weave launch`", p.API.Addr())
	case api.StatusCode(err) == 404:
		msg = fmt.Sprintf(`the weave router at %s runs without IPAM (--ipalloc-range "")`, p.API.Addr())
	}
	return types.NewError(types.ErrPluginNotAvailable, msg, err.Error())
}

// requireContainer checks the CNI_CONTAINERID/CNI_IFNAME a verb needs.
func requireContainer(args *skel.CmdArgs) error {
	if args.ContainerID == "" {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_CONTAINERID is empty", "")
	}
	if args.IfName == "" {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_IFNAME is empty", "")
	}
	return nil
}

func isStatus(err error, code int) bool { return api.StatusCode(err) == code }
