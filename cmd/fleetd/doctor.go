package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fleetd/fleetd/doctor"
	"github.com/fleetd/fleetd/leadshim"
)

// DoctorCmd checks this machine and this fleet, one line per check.
type DoctorCmd struct {
	JSON    bool          `name:"json" help:"Print the checks as one JSON array of {check, status, detail, fix}, for scripts."`
	Roles   string        `help:"Roles file (JSON) to check, as 'fleetd up' gets it: it parses, every role's boundary holds in this environment, every role's command is on PATH at the release fleetd was tested with (default: the built-in roles)." env:"FLEET_ROLES" type:"path" placeholder:"FILE"`
	Herdr   string        `help:"herdr socket path (default: as herdr resolves it: HERDR_SOCKET_PATH, HERDR_SESSION, ~/.config/herdr/herdr.sock)." env:"FLEET_HERDR_SOCKET" type:"path"`
	NoHerdr bool          `help:"This host runs no herdr ('fleetd up --no-herdr'): do not look for one." env:"FLEET_NO_HERDR"`
	DataDir string        `help:"Where 'fleetd up' keeps the JetStream store: checked for free space." default:"${default_data_dir}" env:"FLEET_DATA_DIR" type:"path"`
	Timeout time.Duration `help:"How long each check may take; they run at once, so a run takes about this long when something does not answer." default:"3s"`
}

// Help is the long text of 'fleetd doctor --help'.
func (c *DoctorCmd) Help() string {
	return `Each line is "ok", "warn", "fail" or "skip" (a check that does not apply, with how to make it apply), what was checked and found, and after " — " what to do:

  fleetd        this binary (all a host needs; Go is not) and its hook binary beside it
  herdr         this host's herdr socket answers, in the protocol fleetd speaks
  roles file    the roles file parses and is valid
  boundary      no role's pane would cross the subscription boundary in this environment
  role NAME     the role's command is on PATH, at the release of its CLI fleetd was tested with
  nats          NATS answers at --nats with --creds or the token
  stream FLEET  the event log is provisioned (its size, replicas, leader)
  clock         this machine's and each live host's clock against the NATS server's
  shim          the lead shim at --url is healthy and takes --token
  disk          free space for the store under --data-dir

It only reads: no stream is created, no event written, no agent started (a CLI is asked its --version). The exit status is 1 when a check fails, 0 otherwise (warnings included). The panes' PATH and environment are herdr's: run it where herdr was started from.`
}

// Run runs the checks and prints them.
func (c *DoctorCmd) Run(ctx context.Context, g *Globals) error {
	exe, _ := os.Executable()
	shimTLS, _ := leadshim.ClientTLS(g.TLSCA, g.TLSInsecure) // Globals.Validate refused a bad one already
	rs := doctor.Run(ctx, doctor.Config{
		Version: version, Executable: exe,
		Herdr: c.Herdr, NoHerdr: c.NoHerdr, RolesFile: c.Roles,
		NATSURL: g.NATS, Creds: g.Creds, NATSToken: g.natsToken(),
		ShimURL: g.URL, ShimToken: g.Token, ShimTLS: shimTLS,
		DataDir: c.DataDir, Timeout: c.Timeout,
	})
	var err error
	if c.JSON {
		err = doctor.WriteJSON(os.Stdout, rs)
	} else {
		err = doctor.WriteText(os.Stdout, rs)
	}
	if err != nil {
		return err
	}
	if n := doctor.Count(rs, doctor.Fail); n > 0 {
		return exitError{code: 1, err: fmt.Errorf("doctor: %d of %d checks failed", n, len(rs))}
	}
	return nil
}
