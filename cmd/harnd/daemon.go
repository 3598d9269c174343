package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/util/clock"
)

// work is what harnd runs in its own process: the node, and the offline
// operations that write the data dir's trust store.
func work() *daemon.Daemon {
	return &daemon.Daemon{
		RunNode: func(c *cobra.Command) error { return runNode(c) },
		InitMesh: func(dataDir, name string, a wire.TokenCreateArgs) (wire.MeshInit, error) {
			if name == "" {
				name = node.DefaultConfig().Name
			}
			res, err := node.InitMesh(dataDir, name, a, clock.Real{})
			if errors.Is(err, node.ErrConfig) {
				return res, hook.UsageErr(err)
			}
			return res, err
		},
		CreatePendingToken: func(dataDir string, a wire.TokenCreateArgs) (wire.TokenCreated, error) {
			return node.CreatePendingToken(dataDir, a, clock.Real{})
		},
	}
}
