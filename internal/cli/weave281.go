package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/moby/moby/client"
)

// Weave Net 2.8.1's `weave launch` kept its data file in the volume of a
// container named weavedb, mounted at /weavedb, with --db-prefix
// /weavedb/weave: the file is weavedata.db in that volume.
const (
	weave281DBContainer = "weavedb"
	weave281DBMount     = "/weavedb"
	weave281DBPrefix    = "weave"
)

// weave281DBFlags points weaver at 2.8.1's data file in the weavedb
// container's volume (weaver adopts it when our own database is absent),
// unless --db-prefix was given, our database exists, or no Docker engine
// knows that container. Nothing is asked of Docker in the other cases.
func (c *cmd) weave281DBFlags(ctx context.Context, l launchArgs) []string {
	if _, given := l.given["db-prefix"]; given {
		return nil
	}
	if st, err := os.Stat(filepath.Join(c.DataDir, "weavedata.db")); err == nil && st.Size() > 0 {
		return nil
	}
	api, ctx, done, ok := c.localDocker(ctx, dockerPing)
	if !ok {
		return nil
	}
	defer done()
	res, err := api.ContainerInspect(ctx, weave281DBContainer, client.ContainerInspectOptions{})
	if err != nil {
		return nil
	}
	for _, m := range res.Container.Mounts {
		if m.Destination == weave281DBMount && m.Source != "" {
			c.Logger.Info("Weave Net 2.8.1's data volume found: weaver adopts its data file unless it has its own",
				"container", weave281DBContainer, "file", filepath.Join(m.Source, weave281DBPrefix+"data.db"))
			return []string{"--db-prefix=" + filepath.Join(m.Source, weave281DBPrefix)}
		}
	}
	return nil
}
