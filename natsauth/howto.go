package natsauth

import (
	"fmt"
	"io"
	"path/filepath"
)

// HowTo tells the person who ran 'fleetd auth' what Write laid out in dir
// and where each piece goes: every key's path, the command each host runs,
// how to provision once, and which keys must stay off the hosts.
func (c Credentials) HowTo(w io.Writer, dir string) {
	conf := filepath.Join(dir, ServerConfigFile)
	fmt.Fprintf(w, "wrote %s (users, permissions, the cluster route secret) and %d keys, all mode 0600:\n", conf, len(c.Identities))
	for _, id := range c.Identities {
		fmt.Fprintf(w, "  %-24s %s\n", id.Name, KeyPath(dir, id.Name))
	}
	admin := KeyPath(dir, AdminName)
	fmt.Fprintf(w, "\nrun each host with:  fleetd up --server-config %s --creds %s\n", conf, KeyPath(dir, GatewayName("<host>")))
	fmt.Fprintf(w, "provision once:      fleetd provision --nats nats://<host>:4222 --creds %s   (or: fleetd up … --admin-creds %s)\n", admin, admin)
	fmt.Fprintf(w, "a host needs server.conf, its gateway key and its agents' keys (%s); keep %s off the hosts.\n",
		filepath.Join(dir, AgentsDir, AgentName("<id>")+".nk"), filepath.Base(admin))
	fmt.Fprintf(w, "panes get their agent's own key (FLEET_NATS_CREDS); the nats CLI: nats --nkey %s …\n", admin)
}
