package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// TestCommandErrorsReadAsTheDoctorsLines runs failing commands, in this
// process and as the fleetd binary: each prints exactly one line on
// stderr, "fleetd <command>: what failed: cause — fix", the fix the
// doctor gives for the same fault, and exits with the command's status.
func TestCommandErrorsReadAsTheDoctorsLines(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"roles":{"w-claude":{"env_class":"gatway"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"roles":{"w-claude":{}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	noSock := filepath.Join(dir, "no-herdr.sock")
	bare := natstest.Start(t, natstest.WithTCP())
	srv := natstest.Start(t, natstest.WithTCP())
	if _, err := events.EnsureStream(fleettest.Ctx(t), srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	f := fleettest.New(t)
	f.Register("w1", "w-local")
	shim := shimFor(t, f)
	down := "nats://127.0.0.1:1"
	noShim := "http://127.0.0.1:1"

	cases := []struct {
		name string
		args []string
		code int
		// says are what the line holds besides "fleetd <command>: ".
		says []string
	}{
		{name: "NATS down", args: []string{"tail", "--nats", down}, code: 1,
			says: []string{"NATS at " + down + " does not answer", "no servers available",
				" — start the fabric here ('fleetd up'), or point --nats (FLEET_NATS_URL) at its NATS"}},
		{name: "shim down", args: []string{"roster", "--url", noShim}, code: exitUnavailable,
			says: []string{"the lead shim at " + noShim + " does not answer", "connection refused",
				" — start the fabric here ('fleetd up' serves the shim on 127.0.0.1:8765), or point --url (FLEET_URL) at it"}},
		{name: "bad roles file", args: []string{"worktrees", "--roles", bad}, code: 1,
			says: []string{"roles file " + bad + " does not load", `env_class "gatway"`,
				" — fix " + bad + " (docs/roles.md has every field), then run 'fleetd doctor --roles " + bad + "' again"}},
		{name: "bad roles file for spawn", args: []string{"spawn", "--roles", bad, "--role", "w-claude", "--name", "w9",
			"--runtime", "herdr", "--herdr", noSock, "--nats", srv.ClientURL(), "--data-dir", dir}, code: 1,
			says: []string{"roles file " + bad + " does not load", " — fix " + bad}},
		{name: "FLEET not provisioned", args: []string{"spawn", "--roles", good, "--role", "w-claude", "--name", "w9",
			"--runtime", "herdr", "--herdr", noSock, "--nats", bare.ClientURL(), "--data-dir", dir}, code: 1,
			says: []string{"FLEET is not provisioned on " + bare.ClientURL(), " — run 'fleetd provision'"}},
		{name: "herdr missing", args: []string{"spawn", "--roles", good, "--role", "w-claude", "--name", "w9",
			"--runtime", "herdr", "--herdr", noSock, "--nats", srv.ClientURL(), "--data-dir", dir}, code: 1,
			says: []string{"no herdr socket at " + noSock, " — start herdr", "--herdr (FLEET_HERDR_SOCKET)"}},
		{name: "herdr missing, host named", args: []string{"spawn", "--roles", good, "--role", "w-claude", "--name", "w9", "--host", "h1",
			"--runtime", "herdr", "--herdr", noSock, "--nats", srv.ClientURL(), "--data-dir", dir}, code: 1,
			says: []string{"no herdr socket at " + noSock, " — start herdr", "--herdr (FLEET_HERDR_SOCKET)"}},
		{name: "unknown agent", args: []string{"send", "--url", shim.URL, "--to", "w-nobody", "hi"}, code: exitRefused,
			says: []string{"the lead shim at " + shim.URL + " answered 404 unknown_agent", `no agent "w-nobody" in the roster`,
				" — 'fleetd roster' lists the fleet's agents"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			command := tc.args[0]
			var stderr bytes.Buffer
			code := runTo(fleettest.Ctx(t), tc.args, &stderr)
			line := checkErrorLine(t, "in process", stderr.String(), code, tc.code, command, tc.says)
			t.Log(line)

			// The binary's whole stderr is that line and nothing else
			// (no log line, no usage).
			cmd := exec.Command(fleetdBin, tc.args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
			var out bytes.Buffer
			cmd.Stderr = &out
			start := time.Now()
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("fleetd %s: %v", command, err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the binary took %v to fail", took)
			}
			if bin := checkErrorLine(t, "binary", out.String(), ee.ExitCode(), tc.code, command, tc.says); bin != line {
				t.Errorf("the binary says\n%s\nthe run in process\n%s", bin, line)
			}
		})
	}
}

// checkErrorLine checks that stderr is one line naming the command and
// saying says, and the exit status; it returns the line.
func checkErrorLine(t *testing.T, how, stderr string, code, want int, command string, says []string) string {
	t.Helper()
	if code != want {
		t.Errorf("%s: exit status %d, want %d", how, code, want)
	}
	line, rest, _ := strings.Cut(stderr, "\n")
	if rest != "" || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("%s: stderr is not one line:\n%s", how, stderr)
	}
	if !strings.HasPrefix(line, "fleetd "+command+": ") {
		t.Errorf("%s: %q does not start with %q", how, line, "fleetd "+command+": ")
	}
	if strings.Count(line, " — ") != 1 {
		t.Errorf("%s: %q does not say its fix once, after \" — \"", how, line)
	}
	for _, s := range says {
		if !strings.Contains(line, s) {
			t.Errorf("%s: %q does not say %q", how, line, s)
		}
	}
	return line
}
