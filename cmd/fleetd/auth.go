package main

import (
	"fmt"
	"path/filepath"

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
	conf := filepath.Join(c.Dir, natsauth.ServerConfigFile)
	fmt.Printf("wrote %s (users, permissions, the cluster route secret) and %d keys, all mode 0600:\n", conf, len(creds.Identities))
	for _, id := range creds.Identities {
		fmt.Printf("  %-24s %s\n", id.Name, natsauth.KeyPath(c.Dir, id.Name))
	}
	admin := natsauth.KeyPath(c.Dir, natsauth.AdminName)
	fmt.Printf("\nrun each host with:  fleetd up --server-config %s --creds %s\n", conf, natsauth.KeyPath(c.Dir, natsauth.GatewayName("<host>")))
	fmt.Printf("provision once:      fleetd provision --nats nats://<host>:4222 --creds %s   (or: fleetd up … --admin-creds %s)\n", admin, admin)
	fmt.Printf("a host needs server.conf, its gateway key and its agents' keys (%s); keep %s off the hosts.\n",
		filepath.Join(c.Dir, natsauth.AgentsDir, natsauth.AgentName("<id>")+".nk"), filepath.Base(admin))
	fmt.Printf("panes get their agent's own key (FLEET_NATS_CREDS); the nats CLI: nats --nkey %s …\n", admin)
	return nil
}
