package main

import (
	"context"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/roles"
)

// ProvisionCmd creates the fabric's streams and consumers with an identity
// allowed to: under 'fleetd auth', only the admin may create, change or
// delete streams, and gateways wait until this has run.
type ProvisionCmd struct {
	Replicas int    `help:"Replicas of FLEET, the buckets and the router's consumers (default: 1, or 3 when the server is in a cluster)." env:"FLEET_REPLICAS"`
	Roles    string `help:"Roles file: the router's durable consumer is created for each role (default: the built-in roles)." env:"FLEET_ROLES" type:"path"`
}

// Run creates or updates FLEET, the projection buckets and the router's
// consumers, waiting while a cluster forms.
func (c *ProvisionCmd) Run(ctx context.Context, g *Globals) error {
	rc, err := roles.Load(c.Roles)
	if err != nil {
		return err
	}
	log := g.Logger()
	den := gateway.NewDenials(log)
	nc, _, err := dialNATS(g, "fleetd provision", nats.ErrorHandler(den.Handle))
	if err != nil {
		return exitError{code: exitUnavailable, err: err}
	}
	defer nc.Close()
	return gateway.ProvisionAs(ctx, nc, den, gateway.Provisioner{Log: log, Replicas: c.Replicas, Roles: rc.Names()}, os.Stdout)
}
