package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/containernetworking/cni/pkg/types"
)

// Defaults of the network configuration.
const (
	DefaultBridge  = "weave"
	DefaultDataDir = "/var/lib/cni/weave"
	// DataDirEnv, when set, replaces DefaultDataDir for configs without dataDir.
	DataDirEnv = "WEAVE_CNI_DATA_DIR"
	// IPAMType is the type of our own IPAM plugin; weave-net serves it
	// (and an empty ipam.type) itself, without executing it.
	IPAMType = "weave-ipam"
)

// NetConf is the configuration of weave-net (and, through IPAM, of
// weave-ipam). Field names follow Weave Net 2.8.1's plugin.
type NetConf struct {
	types.PluginConf
	Bridge      string   `json:"bridge,omitempty"`
	MTU         int      `json:"mtu,omitempty"`
	HairpinMode *bool    `json:"hairpinMode,omitempty"`
	IsGateway   bool     `json:"isGateway,omitempty"`
	IPMasq      bool     `json:"ipMasq,omitempty"`
	DataDir     string   `json:"dataDir,omitempty"`
	HTTPAddr    string   `json:"httpAddr,omitempty"` // router API; "" = $WEAVE_HTTP_ADDR or 127.0.0.1:6784
	IPAM        IPAMConf `json:"ipam"`
}

// IPAMConf is the "ipam" object.
type IPAMConf struct {
	Type    string      `json:"type,omitempty"`
	Subnet  string      `json:"subnet,omitempty"`
	Gateway string      `json:"gateway,omitempty"`
	Routes  []RouteConf `json:"routes,omitempty"`

	subnet  netip.Prefix // parsed Subnet; zero = the router's default subnet
	gateway netip.Addr   // parsed Gateway; zero = the bridge's address
	routes  []route
}

// RouteConf is one configured route; GW empty means the gateway.
type RouteConf struct {
	Dst string `json:"dst"`
	GW  string `json:"gw,omitempty"`
}

type route struct {
	dst netip.Prefix
	gw  netip.Addr // zero: via the gateway
}

// ours reports whether addresses come from the weave router directly.
func (c *IPAMConf) ours() bool { return c.Type == "" || c.Type == IPAMType }

// hairpin is hairpinMode with its default, true.
func (c *NetConf) hairpin() bool { return c.HairpinMode == nil || *c.HairpinMode }

// ParseNetConf decodes and validates stdin data. Errors are *types.Error
// naming the bad field and value.
func ParseNetConf(data []byte) (*NetConf, error) {
	conf := &NetConf{}
	if err := decode(data, conf); err != nil {
		return nil, err
	}
	if conf.Bridge == "" {
		conf.Bridge = DefaultBridge
	}
	if conf.DataDir == "" {
		conf.DataDir = defaultDataDir()
	}
	if conf.IsGateway {
		return nil, types.NewError(types.ErrUnsupportedField, `"isGateway": true is not supported by weave-net`,
			"the weave bridge's address is managed by the router (weave expose)")
	}
	if conf.IPMasq {
		return nil, types.NewError(types.ErrUnsupportedField, `"ipMasq": true is not supported by weave-net`,
			"masquerading is set up by the router for exposed subnets")
	}
	if conf.MTU != 0 && (conf.MTU < 68 || conf.MTU > 65535) {
		return nil, invalidf("mtu", conf.MTU, "must be between 68 and 65535 (0 = the bridge's MTU)")
	}
	if err := conf.IPAM.parse(); err != nil {
		return nil, err
	}
	return conf, nil
}

func defaultDataDir() string {
	if d := os.Getenv(DataDirEnv); d != "" {
		return d
	}
	return DefaultDataDir
}

// gcRequested reports whether a GC config names the valid attachments
// (under the spec's key or libcni's older one). Without the list GC does
// nothing rather than treat every attachment as stale.
func gcRequested(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := m["cni.dev/valid-attachments"]
	_, old := m["cni.dev/attachments"]
	return ok || old
}

// decode unmarshals data into v, mapping JSON errors to CNI errors.
func decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return types.NewError(types.ErrDecodingFailure,
			fmt.Sprintf("network config is not valid JSON (at byte %d): %v", syn.Offset, err), string(data))
	case errors.As(err, &typ):
		return types.NewError(types.ErrInvalidNetworkConfig,
			fmt.Sprintf("network config field %q has the wrong type: want %s, got a JSON %s", typ.Field, typ.Type, typ.Value), err.Error())
	}
	return types.NewError(types.ErrDecodingFailure, "decode network config: "+err.Error(), string(data))
}

// invalidf is an ErrInvalidNetworkConfig naming field and value.
func invalidf(field string, value any, why string) *types.Error {
	return types.NewError(types.ErrInvalidNetworkConfig,
		fmt.Sprintf("network config field %q: %v: %s", field, value, why), "")
}

// parse validates and parses the subnet, gateway and routes.
func (c *IPAMConf) parse() error {
	if !c.ours() {
		return nil // the delegate validates its own config
	}
	if c.Subnet != "" {
		p, err := netip.ParsePrefix(c.Subnet)
		if err != nil || !p.Addr().Is4() {
			return invalidf("ipam.subnet", fmt.Sprintf("%q", c.Subnet), "not an IPv4 CIDR such as 10.32.0.0/12")
		}
		if p != p.Masked() {
			return invalidf("ipam.subnet", fmt.Sprintf("%q", c.Subnet), "has host bits set; did you mean "+p.Masked().String()+"?")
		}
		c.subnet = p
	}
	if c.Gateway != "" {
		a, err := netip.ParseAddr(c.Gateway)
		if err != nil || !a.Is4() {
			return invalidf("ipam.gateway", fmt.Sprintf("%q", c.Gateway), "not an IPv4 address")
		}
		c.gateway = a
	}
	for i, r := range c.Routes {
		rt, err := parseRoute(i, r)
		if err != nil {
			return err
		}
		c.routes = append(c.routes, rt)
	}
	return nil
}

func parseRoute(i int, r RouteConf) (route, error) {
	field := fmt.Sprintf("ipam.routes[%d]", i)
	dst, err := netip.ParsePrefix(r.Dst)
	if err != nil || !dst.Addr().Is4() {
		return route{}, invalidf(field+".dst", fmt.Sprintf("%q", r.Dst), "not an IPv4 CIDR")
	}
	rt := route{dst: dst.Masked()}
	if r.GW != "" {
		if rt.gw, err = netip.ParseAddr(r.GW); err != nil || !rt.gw.Is4() {
			return route{}, invalidf(field+".gw", fmt.Sprintf("%q", r.GW), "not an IPv4 address")
		}
	}
	return rt, nil
}
