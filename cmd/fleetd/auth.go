package main

import (
	"fmt"
	"os"

	"github.com/fleetd/fleetd/natsauth"
)

// AuthCmd writes NATS users and permissions for a fleet.
type AuthCmd struct {
	Dir    string   `help:"Where to write server.conf and the .nk seed files (agents' in its agents/ subdirectory)." default:"${default_data_dir}/auth" type:"path"`
	Hosts  []string `help:"Hosts (gateways) of the fleet." required:"" placeholder:"HOST"`
	Agents []string `help:"Agents as host:agent-id, e.g. h1:w-claude-1." placeholder:"HOST:AGENT"`
}

// Run generates an admin, one nkey user per gateway and per agent, and the
// server config that enforces their subject permissions.
func (c *AuthCmd) Run() error {
	f, err := natsauth.ParseFleet(c.Hosts, c.Agents)
	if err != nil {
		return fmt.Errorf("--agents: %w", err)
	}
	creds, err := natsauth.Generate(f)
	if err != nil {
		return err
	}
	if err := natsauth.Write(c.Dir, creds); err != nil {
		return err
	}
	creds.HowTo(os.Stdout, c.Dir)
	return nil
}
