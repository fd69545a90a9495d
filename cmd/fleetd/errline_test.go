package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/roles"
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
		{name: "up's NATS down", args: []string{"up", "--nats", down, "--no-herdr", "--data-dir", filepath.Join(dir, "up")}, code: 1,
			says: []string{"NATS at " + down + " does not answer", " — start the NATS at " + down + ", or leave --nats (FLEET_NATS_URL) out"}},
		{name: "bad plan", args: []string{"orchestrate", "--url", noShim, bad}, code: 1,
			says: []string{"invalid plan", " — fix the plan (its schema: go doc github.com/fleetd/fleetd/orchestrator"}},
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
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("fleetd %s: %v", command, err)
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

// The faults only a command meets, and errors of no known fault, each
// make one line too: agentapi missing says how to install it, a pane
// crossing the boundary and an agent that did not start say what to do,
// no up driving an existing herdr keeps the gateway's advice as the fix,
// an unknown error is folded onto one line without saying its command
// twice, and a long cause is cut.
func TestErrorLineSaysEachFault(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "herdr.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, notInstalled := agentapi.LookPath(filepath.Join(dir, "agentapi"))
	rc, err := roles.Parse([]byte(`{"roles":{"w":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	role, _ := rc.Get("w")
	boundary := role.CheckEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-x"})
	if boundary == nil {
		t.Fatal("no boundary error to explain")
	}
	noOwner := fmt.Errorf("%w at %s on vm (none heard in the last 1m0s): start 'fleetd up' here, or name its host with --host", gateway.ErrNoOwner, sock)
	long := strings.Repeat("x", 2000)

	spawn := []string{"spawn", "--role", "w", "--name", "w9", "--herdr", sock, "--roles", filepath.Join(dir, "roles.json")}
	cases := []struct {
		name string
		args []string
		err  error
		want string
	}{
		{"agentapi not installed", []string{"up"}, fmt.Errorf("agentapi runtime: %w", notInstalled),
			"fleetd up: agentapi runtime: agentapi not installed: " + filepath.Join(dir, "agentapi") + ": "},
		{"boundary", spawn, fmt.Errorf("spawn w9 refused: %w", boundary), "fleetd spawn: the pane would cross the subscription boundary: role \"w\""},
		{"not started", spawn, fmt.Errorf("%w: the pane shows: sh: claude: not found\n$ ", herdrbridge.ErrNotStarted),
			"fleetd spawn: the agent did not start: the pane shows: sh: claude: not found; $ — 'fleetd doctor --roles " + filepath.Join(dir, "roles.json") + "' checks"},
		{"no up drives herdr", spawn, noOwner, "fleetd spawn: no running fleetd up drives this herdr at " + sock + " on vm (none heard in the last 1m0s) — start 'fleetd up' here, or name its host with --host"},
		{"unknown, two lines", spawn, errors.New("first\nsecond"), "fleetd spawn: first; second"},
		{"the command's own name", []string{"doctor"}, exitError{code: 1, err: errors.New("doctor: 2 of 10 checks failed")}, "fleetd doctor: 2 of 10 checks failed"},
		{"long cause", spawn, fmt.Errorf("%w: the pane shows: %s", herdrbridge.ErrNotStarted, long), "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cli CLI
			parser, err := kong.New(&cli, cliOptions(fleettest.Ctx(t))...)
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := parser.Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			line := errorLine(kctx, &cli.Globals, tc.err)
			t.Log(line)
			if !strings.HasPrefix(line, tc.want) && !strings.Contains(line, tc.want) {
				t.Errorf("line\n%s\nwant it to hold\n%s", line, tc.want)
			}
			if strings.Contains(line, "\n") || strings.Count(line, " — ") > 1 || utf8.RuneCountInString(line) > 2*maxCause+300 {
				t.Errorf("not one short line: %q", line)
			}
			if tc.name != "unknown, two lines" && tc.name != "the command's own name" && !strings.Contains(line, " — ") {
				t.Errorf("no fix: %q", line)
			}
		})
	}
}
