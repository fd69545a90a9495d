package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fleetd/fleetd/natsauth"
)

// AuthCmd writes NATS users and permissions for a fleet.
type AuthCmd struct {
	Dir    string   `help:"Where to write server.conf and the .nk seed files." default:"${default_data_dir}/auth" type:"path"`
	Hosts  []string `help:"Hosts (gateways) of the fleet." required:"" placeholder:"HOST"`
	Agents []string `help:"Agents as host:agent-id, e.g. h1:w-claude-1." placeholder:"HOST:AGENT"`
}

// Run generates one nkey user per gateway and per agent and the server
// config that enforces their subject permissions.
func (c *AuthCmd) Run() error {
	f := natsauth.Fleet{Hosts: map[string][]string{}}
	for _, h := range c.Hosts {
		f.Hosts[h] = nil
	}
	for _, ha := range c.Agents {
		host, agent, ok := strings.Cut(ha, ":")
		if !ok {
			return fmt.Errorf("--agents %q: want host:agent-id", ha)
		}
		if _, known := f.Hosts[host]; !known {
			return fmt.Errorf("--agents %q: host %q is not in --hosts", ha, host)
		}
		f.Hosts[host] = append(f.Hosts[host], agent)
	}
	ids, err := natsauth.Generate(f)
	if err != nil {
		return err
	}
	if err := natsauth.Write(c.Dir, ids); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %d credentials:\n", filepath.Join(c.Dir, "server.conf"), len(ids))
	for _, id := range ids {
		fmt.Printf("  %-24s %s\n", id.Name, filepath.Join(c.Dir, id.Name+".nk"))
	}
	fmt.Printf("\nrun each host with:  fleetd up --server-config %s --creds %s\n", filepath.Join(c.Dir, "server.conf"), filepath.Join(c.Dir, "gateway-<host>.nk"))
	fmt.Println("agents' panes get FLEET_NATS_CREDS=<dir>/agent-<id>.nk; the nats CLI: nats --nkey <dir>/admin.nk …")
	return nil
}
