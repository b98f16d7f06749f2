package cli

import "context"

// WeaverArgv is the command line `weave launch args...` runs under cfg:
// the weaver binary (cfg.WeaverPath, else found as launch finds it), the
// flags launch adds from the environment (data and run dirs, HTTP address,
// port, MTU, ...) unless args give them, the Docker plugin flags when
// dockerd answers, then args. Programs that supervise
// weaver themselves, such as weave-kube, start it with this so it runs
// exactly as launch would run it.
func WeaverArgv(ctx context.Context, cfg Config, args []string) ([]string, error) {
	c := &cmd{Config: cfg.withDefaults()}
	l, err := parseLaunch(args)
	if err != nil {
		return nil, err
	}
	c.applyLaunchFlags(l)
	return c.launchArgv(ctx, l, args)
}

// launchArgv is the weaver command line for the parsed launch arguments.
func (c *cmd) launchArgv(ctx context.Context, l launchArgs, args []string) ([]string, error) {
	weaver, err := c.weaverPath()
	if err != nil {
		return nil, err
	}
	argv := append([]string{weaver}, c.weaverFlags(l)...)
	argv = append(argv, c.dockerFlags(ctx, l)...)
	argv = append(argv, c.weave281DBFlags(ctx, l)...)
	return append(argv, args...), nil
}
