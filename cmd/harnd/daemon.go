package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli"
	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/util/clock"
)

// daemon is what harnd runs in its own process: the node, and the offline
// operations that write the data dir's trust store.
func daemon() *cli.Daemon {
	return &cli.Daemon{
		RunNode: func(c *cobra.Command) error { return runNode(c) },
		InitMesh: func(dataDir, name string, a wire.TokenCreateArgs) (wire.MeshInit, error) {
			if name == "" {
				name = node.DefaultConfig().Name
			}
			res, err := node.InitMesh(dataDir, name, a, clock.Real{})
			if errors.Is(err, node.ErrConfig) {
				return res, cli.UsageErr(err)
			}
			return res, err
		},
		CreatePendingToken: func(dataDir string, a wire.TokenCreateArgs) (wire.TokenCreated, error) {
			return node.CreatePendingToken(dataDir, a, clock.Real{})
		},
	}
}
