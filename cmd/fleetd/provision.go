package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/natsauth"
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
	nc, js, err := dialNATS(g, "fleetd provision", nats.ErrorHandler(den.Handle))
	if err != nil {
		return exitError{code: exitUnavailable, err: err}
	}
	defer nc.Close()
	replicas := c.Replicas
	if replicas == 0 {
		replicas = 1
		if nc.ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	p := gateway.Provisioner{JS: js, Log: log, Denials: den, Replicas: replicas, Roles: rc.Names(), Strict: true}
	pctx, cancel := context.WithTimeout(ctx, gateway.ProvisionTimeout)
	defer cancel()
	if err := p.Run(pctx); err != nil {
		if errors.Is(err, gateway.ErrDenied) {
			return fmt.Errorf("%w (provision with the admin's key: --creds <dir>/%s.nk from 'fleetd auth')", err, natsauth.AdminName)
		}
		return err
	}
	fmt.Fprintf(os.Stdout, "provisioned at %s (R%d): stream %s; buckets %s; consumers %s\n", nc.ConnectedUrlRedacted(), replicas,
		events.Stream, strings.Join(gateway.FabricBuckets, ", "), strings.Join(gateway.RouterConsumers(rc.Names()), ", "))
	return nil
}
