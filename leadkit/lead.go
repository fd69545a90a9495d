package leadkit

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetd/fleetd/leadshim"
)

// RolesTimeout bounds how long 'fleetd init lead' asks a running fleetd
// for its roles before it writes the defaults instead.
const RolesTimeout = 3 * time.Second

// Roles are the roles the charter lists: those of the fleetd cl reaches
// (at url, which the answer names), less the lead's own; when it does
// not answer within RolesTimeout or has none, DefaultRoles. The second
// result says where they came from, for the summary.
func Roles(ctx context.Context, cl *leadshim.Client, url string) ([]leadshim.RoleState, string) {
	ctx, cancel := context.WithTimeout(ctx, RolesTimeout)
	defer cancel()
	roles, err := cl.Roles(ctx)
	if err != nil || len(roles) == 0 {
		return DefaultRoles, "from the Team design's defaults; fleetd at " + url + " did not answer"
	}
	return Workers(roles), "from fleetd at " + url
}

// Command is how the lead's shell should call this fleetd: by name when
// the fleetd on PATH is this very binary, else by its absolute path.
func Command() string {
	self, err := os.Executable()
	if err != nil {
		return "fleetd"
	}
	if onPath, err := exec.LookPath("fleetd"); err == nil {
		a, _ := filepath.EvalSymlinks(onPath)
		b, _ := filepath.EvalSymlinks(self)
		if a == b {
			return "fleetd"
		}
	}
	return self
}

// URLFlags are the global flags the lead's fleetd commands need to reach
// the fleetd at url: --url, unless url is the shim's default address —
// the lead's shell may not have FLEET_URL.
func URLFlags(url string) []string {
	if u := strings.TrimRight(url, "/"); u != "" && u != "http://"+leadshim.DefaultAddr {
		return []string{"--url", u}
	}
	return nil
}

// Summary tells the person who ran 'fleetd init lead' what Install wrote
// into dir, with the roles from source, and how the lead starts.
func (in Installed) Summary(w io.Writer, k Kit, dir, source string) {
	verb := "added the team charter to"
	if in.Replaced {
		verb = "replaced the team charter in"
	}
	bin := k.Bin()
	fmt.Fprintf(w, "fleetd init lead:\n  %s %s (roles %s)\n  wrote %s: /delegate <role> \"<task>\" calls the fleetd MCP tool send\n  set the fleetd server in %s: '%s mcp' as agent %s\n",
		verb, in.ClaudeMD, source, in.Command, in.MCP, bin, k.Agent)
	fmt.Fprintf(w, "Start the lead's Claude Code in %s; it learns the live roster with '%s roster'.\n", dir, bin)
	if k.Token {
		fmt.Fprintln(w, "The shim needs a token: export FLEET_TOKEN in the lead's environment (it is not written to any file).")
	}
}
