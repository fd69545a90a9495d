package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/natsauth"
)

// NATS is never more open than the shim: `fleetd up` refuses a NATS
// listener (or cluster routes) other machines can reach without
// authentication, and says how to fix it.
func TestUpRefusesANATSMoreOpenThanTheShim(t *testing.T) {
	noUsers := filepath.Join(t.TempDir(), "plain.conf")
	if err := os.WriteFile(noUsers, []byte("max_payload: 4MB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := t.TempDir()
	if err := (&AuthCmd{Dir: users, Hosts: []string{"testhost"}}).Run(); err != nil {
		t.Fatal(err)
	}
	p, c := freePort(t), freePort(t)
	for _, tc := range []struct {
		name     string
		args     []string
		listener string
	}{
		{"NATS on every interface, the shim behind a token", []string{"--listen", fmt.Sprintf("0.0.0.0:%d", p),
			"--http", fmt.Sprintf("0.0.0.0:%d", freePort(t))}, "client listener 0.0.0.0"},
		{"a server config without users", []string{"--listen", fmt.Sprintf(":%d", p), "--server-config", noUsers}, "client listener :"},
		{"cluster routes on every interface", []string{"--listen", fmt.Sprintf("127.0.0.1:%d", p),
			"--cluster", "c", "--cluster-listen", fmt.Sprintf("0.0.0.0:%d", c), "--routes", fmt.Sprintf("nats://127.0.0.1:%d", c)}, "cluster listener 0.0.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := append([]string{"up", "--host", "testhost", "--data-dir", t.TempDir(), "--no-herdr", "--http", fmt.Sprintf("127.0.0.1:%d", freePort(t))}, tc.args...)
			cmd := exec.CommandContext(ctx, fleetdBin, args...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("fleetd up %v did not refuse (%v):\n%s", tc.args, err, out)
			}
			for _, want := range []string{tc.listener, "without authentication", "--token", "fleetd auth", "--server-config", "loopback"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
		})
	}
	// With a token, or with fleetd auth's server config, the same
	// listeners are fine (the cluster's routes authenticate with the
	// token, or with the secret in server.conf).
	for _, args := range [][]string{
		{"--listen", fmt.Sprintf("0.0.0.0:%d", p), "--token", "T"},
		{"--listen", fmt.Sprintf("0.0.0.0:%d", p), "--server-config", filepath.Join(users, "server.conf"),
			"--creds", filepath.Join(users, "gateway-testhost.nk"), "--admin-creds", filepath.Join(users, "admin.nk")},
	} {
		up := startUp(t, t.TempDir(), args...)
		if err := up.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := up.cmd.Wait(); err != nil {
			t.Errorf("up %v: %v\n%s", args, err, up.Output())
		}
	}
}

// The one-host form of docs/clusters.md's cluster example: NATS and the shim on
// every interface, one --token. Every NATS client must present it: an
// outsider can neither send a turn over NATS nor delete the log; fleetd's
// own commands, the nats CLI and the hooks in the panes fleetd spawns
// (FLEET_NATS_TOKEN) do, and a turn goes through.
func TestUpWithATokenAuthenticatesEveryNATSClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	const token = "s3cret-token"
	h := startSecureHost(t, token, "--token", token)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// An outsider: no token, no connection, no turn, no deletion.
	if nc, err := nats.Connect(h.natsURL); err == nil {
		nc.Close()
		t.Fatal("connected to NATS without the token")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("without the token: %v, want an authorization violation", err)
	}
	if natsBin := natsTool(t); natsBin != "" {
		for _, args := range [][]string{
			{"req", "fleetd.send", `{"to":"w-1","text":"INJECTED"}`},
			{"stream", "rm", events.Stream, "-f"},
		} {
			out, err := runNats(ctx, t, natsBin, h.natsURL, args...)
			if err == nil || !strings.Contains(out, "Authorization Violation") {
				t.Errorf("nats %v without the token: %v\n%s", args, err, out)
			}
		}
		if out, err := runNats(ctx, t, natsBin, h.natsURL, "--token", token, "stream", "info", events.Stream); err != nil {
			t.Errorf("nats stream info with the token: %v\n%s", err, out)
		}
	}
	if out, err := exec.CommandContext(ctx, fleetdBin, "tail", "--nats", h.natsURL, "--since", "all", "--no-follow").CombinedOutput(); err == nil {
		t.Errorf("fleetd tail without the token read the log:\n%s", out)
	}
	tail := exec.CommandContext(ctx, fleetdBin, "tail", "--nats", h.natsURL, "--since", "all", "--no-follow")
	tail.Env = append(os.Environ(), "FLEET_TOKEN="+token)
	if out, err := tail.CombinedOutput(); err != nil || !strings.Contains(string(out), "host") {
		t.Errorf("fleetd tail with FLEET_TOKEN: %v\n%s", err, out)
	}

	// The pane's hooks authenticate with the token they were given: the
	// turn's submission and reply come from them.
	g := &Globals{Host: h.name, NATS: h.natsURL, URL: h.httpURL, Token: token, LogLevel: "error"}
	h.spawn(t, g, "w-1")
	env, err := send(ctx, h.fleetHost, "w-1", "under a token")
	if err != nil || env.Reply != "SIM: under a token" {
		t.Fatalf("a turn under a token: %+v, %v", env, err)
	}
	if n := h.hookEvents(t, nats.Token(token), "w-1"); n == 0 {
		t.Error("w-1's hooks appended nothing")
	}
	if strings.Contains(h.up.Output(), "replayed spooled hook events") {
		t.Errorf("the hooks could not append (their events were spooled and replayed by the gateway):\n%s", h.up.Output())
	}
}

// docs/security.md's secure example with `fleetd auth`: a gateway key cannot
// provision, so fleetd up waits until the admin's `fleetd provision` has
// run; then a turn goes through under every identity's own key, with no
// permission violation by the gateway or the hooks; and each identity,
// used as an attacker would with the nats CLI, is refused what is not its
// part: an agent reading everyone's replies, or registering itself in
// another agent's pane and queueing a prompt there; a gateway deleting,
// purging or capping the log, or adding a stream that forges another
// agent's replies; anyone without a key sending a turn.
func TestUnderFleetdAuthEachKeyDoesOnlyItsPart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	natsBin := requireTool(t, "nats", "go install github.com/nats-io/natscli/nats@v0.5.0")
	dir := t.TempDir()
	if err := (&AuthCmd{Dir: dir, Hosts: []string{"testhost"}, Agents: []string{"testhost:w-1", "testhost:w-2"}}).Run(); err != nil {
		t.Fatal(err)
	}
	gatewayKey, adminKey := filepath.Join(dir, "gateway-testhost.nk"), filepath.Join(dir, "admin.nk")
	agentKey := func(a string) string { return filepath.Join(dir, "agents", "agent-"+a+".nk") }
	const token = "shim-token"
	h := startSecureHost(t, token, "--token", token, "--server-config", filepath.Join(dir, "server.conf"), "--creds", gatewayKey)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Provisioning belongs to the admin.
	admin := &Globals{NATS: h.natsURL, Creds: adminKey, LogLevel: "error"}
	if err := (&ProvisionCmd{Roles: h.roles}).Run(ctx, admin); err != nil {
		t.Fatalf("fleetd provision with the admin's key: %v", err)
	}
	waitLaunched(t, h.up, 30*time.Second)
	if err := (&ProvisionCmd{Roles: h.roles}).Run(ctx, &Globals{NATS: h.natsURL, Creds: gatewayKey, LogLevel: "error"}); !errors.Is(err, gateway.ErrDenied) {
		t.Errorf("fleetd provision with the gateway's key: %v, want it refused", err)
	}

	// A turn under every identity's own key.
	g := &Globals{Host: h.name, NATS: h.natsURL, URL: h.httpURL, Creds: gatewayKey, Token: token, LogLevel: "error"}
	h.spawn(t, g, "w-1")
	h.spawn(t, g, "w-2")
	env, err := send(ctx, h.fleetHost, "w-2", "under fleetd auth")
	if err != nil || env.Reply != "SIM: under fleetd auth" {
		t.Fatalf("a turn under fleetd auth: %+v, %v", env, err)
	}
	// A role turn: the router's durable consumer under the gateway's key.
	env, err = send(ctx, h.fleetHost, "role:w", "a role turn under fleetd auth")
	if err != nil || env.Reply != "SIM: a role turn under fleetd auth" {
		t.Fatalf("a role turn under fleetd auth: %+v, %v", env, err)
	}
	adminOpt, err := natsauth.ConnectOption(adminKey)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.hookEvents(t, adminOpt, "w-2"); n == 0 {
		t.Error("w-2's hooks appended nothing")
	}
	w2Pane := h.paneOf(t, "w-2")

	natsAs := func(key string, args ...string) (string, error) {
		pre := []string{"--timeout", "2s"}
		if key != "" {
			pre = append(pre, "--nkey", key)
			if p := natsauth.InboxPrefix(natsauth.IdentityName(key)); p != "" {
				pre = append(pre, "--inbox-prefix", p)
			}
		}
		return runNats(ctx, t, natsBin, h.natsURL, append(pre, args...)...)
	}
	// The CLI reports a refused publish but may still exit 0 (a request
	// then merely times out): the server's word is what counts.
	refused := func(who string, out string, err error, want string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("%s: not refused (%v), want %q:\n%s", who, err, want, out)
		}
	}

	// An agent: no one else's replies, no steering another pane.
	out, err := natsAs(agentKey("w-1"), "sub", "--count", "1", "_INBOX.>")
	refused("w-1 subscribing to _INBOX.>", out, err, `Permissions Violation for Subscription to "_INBOX.>"`)
	out, err = natsAs(agentKey("w-1"), "sub", "--count", "1", "_INBOX_agent-w-2.>")
	refused("w-1 subscribing to w-2's inbox", out, err, "Permissions Violation for Subscription")
	reg, _ := json.Marshal(events.Event{ID: "01JATTACK00000000000000001", Subject: "w-1", Source: "fleetd/testhost/gateway",
		Time: time.Now(), Data: events.AgentRegistered{Agent: "w-1", Host: h.name, Pane: w2Pane, Role: "w"}})
	out, err = natsAs(agentKey("w-1"), "pub", "fleet.agent.w-1.registered", string(reg))
	refused("w-1 registering itself in w-2's pane", out, err, `Permissions Violation for Publish to "fleet.agent.w-1.registered"`)
	queued, _ := json.Marshal(events.Event{ID: "01JATTACK00000000000000002", Subject: "w-1", Source: "fleetd/testhost/shim",
		Time: time.Now(), Data: events.AgentQueued{Text: "INJECTED"}})
	out, err = natsAs(agentKey("w-1"), "pub", "fleet.agent.w-1.queued", string(queued))
	refused("w-1 queueing a prompt for itself", out, err, `Permissions Violation for Publish to "fleet.agent.w-1.queued"`)
	out, err = natsAs(agentKey("w-1"), "req", "fleetd.send", `{"to":"w-2","text":"INJECTED"}`)
	refused("w-1 sending a turn over the micro service", out, err, `Permissions Violation for Publish to "fleetd.send"`)

	// A gateway: the log is not its to edit.
	for _, args := range [][]string{
		{"stream", "rm", events.Stream, "-f"},
		{"stream", "purge", events.Stream, "--subject", "fleet.agent.w-2.>", "-f"},
		{"stream", "edit", events.Stream, "--max-msgs", "10", "-f"},
		{"stream", "add", "EVIL", "--subjects", "evil.>", "--republish-source", "evil.>", "--republish-destination", "fleet.agent.w-2.replied", "--defaults"},
	} {
		out, err := natsAs(gatewayKey, args...)
		if err == nil {
			t.Errorf("the gateway's nats %v succeeded:\n%s", args, out)
		}
	}
	// No key at all.
	out, err = natsAs("", "req", "fleetd.send", `{"to":"w-2","text":"INJECTED"}`)
	refused("sending a turn without a key", out, err, "Authorization Violation")

	// The admin taps it all, and sees the log whole.
	if out, err := natsAs(adminKey, "req", "fleetd.roster", ""); err != nil || !strings.Contains(out, `"w-2"`) {
		t.Errorf("the admin's nats req fleetd.roster: %v\n%s", err, out)
	}
	ajs := connectJS(t, h.natsURL, adminOpt)
	s, err := ajs.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatalf("FLEET after the gateway's attempts: %v", err)
	}
	if cfg := s.CachedInfo().Config; cfg.MaxMsgs != -1 {
		t.Errorf("FLEET capped at %d messages", cfg.MaxMsgs)
	}
	if _, err := ajs.Stream(ctx, "EVIL"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("stream EVIL: %v", err)
	}
	if n := h.hookEvents(t, adminOpt, "w-2"); n == 0 {
		t.Error("w-2's events were purged")
	}
	for _, ev := range readLogWith(t, h.natsURL, adminOpt) {
		if strings.HasPrefix(ev.ID, "01JATTACK") || strings.Contains(fmt.Sprint(ev.Data), "INJECTED") {
			t.Errorf("an attacker's event was stored: %+v", ev)
		}
	}
	if got := h.paneOf(t, "w-1"); got == w2Pane {
		t.Errorf("w-1 is registered in w-2's pane %s", got)
	}

	// The gateway and the hooks ran under exactly their permissions: the
	// server reported no violation by the gateway's or w-2's key other
	// than the test's own attempts with the CLI and the gateway's one try
	// to provision, and the gateway none to itself.
	upOut := h.up.Output()
	if strings.Contains(upOut, "replayed spooled hook events") {
		t.Errorf("the hooks could not append (their events were spooled and replayed by the gateway):\n%s", upOut)
	}
	if strings.Contains(upOut, "NATS refused a request") {
		t.Errorf("the gateway was refused a request:\n%s", upOut)
	}
	provisionTries := 0
	for _, key := range []string{gatewayKey, agentKey("w-2")} {
		pub := publicKey(t, key)
		for _, line := range strings.Split(upOut, "\n") {
			switch {
			case !strings.Contains(line, "Violation") || !strings.Contains(line, pub):
			case strings.Contains(line, "NATS CLI") || strings.Contains(line, "fleetd provision"):
			case strings.Contains(line, `Subject \"$JS.API.STREAM.UPDATE.FLEET\"`) && provisionTries == 0:
				provisionTries++
			default:
				t.Errorf("%s was refused: %s", filepath.Base(key), line)
			}
		}
	}
}

// secureHost is one `fleetd up` on every interface with its herdr, as the
// secure example of docs/security.md runs it.
type secureHost struct {
	*fleetHost
	roles string
}

// startSecureHost starts a herdr and `fleetd up` listening on every
// interface with args (its auth), and waits until the up serves or, under
// a gateway key, waits to be provisioned.
func startSecureHost(t *testing.T, token string, args ...string) *secureHost {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "g8-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	natsPort, httpPort := freePort(t), freePort(t)
	h := &secureHost{fleetHost: &fleetHost{name: "testhost", data: t.TempDir(), sock: filepath.Join(sockDir, "herdr.sock"),
		natsURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort), httpURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), token: token},
		roles: clusterRoles(t, 10*time.Millisecond, map[string]int{"w": 0})}
	h.herdr = launch(t, "herdr-protocol server", "dev-herdr", "--socket", h.sock)
	waitLaunched(t, h.herdr, 10*time.Second)
	h.args = append([]string{"up", "--host", h.name, "--data-dir", h.data, "--listen", fmt.Sprintf("0.0.0.0:%d", natsPort),
		"--http", fmt.Sprintf("0.0.0.0:%d", httpPort), "--herdr", h.sock, "--roles", h.roles}, args...)
	h.up = launch(t, "up on host", h.args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- fleetd up ----\n%s", h.up.Output())
		}
	})
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if out := h.up.Output(); !strings.Contains(out, "up on host") && !strings.Contains(out, "waiting for the fabric to be provisioned") {
			return fmt.Errorf("fleetd up neither serves nor waits for provisioning:\n%s", out)
		}
		return nil
	})
	return h
}

// spawn starts agent of role w in a pane, as `fleetd spawn` with g does,
// and waits until it is idle.
func (h *secureHost) spawn(t *testing.T, g *Globals, agent string) {
	t.Helper()
	cmd := &SpawnCmd{Role: "w", Name: agent, herdrFlags: herdrFlags{Roles: h.roles, Herdr: h.sock, DataDir: h.data}}
	if err := cmd.Run(context.Background(), g); err != nil {
		t.Fatalf("spawn %s: %v", agent, err)
	}
	waitRoster(t, h.fleetHost, 30*time.Second, agent+" idle", allIdle(agent))
}

// paneOf is the pane agent is registered in, by the roster.
func (h *secureHost) paneOf(t *testing.T, agent string) string {
	t.Helper()
	r, err := roster(context.Background(), h.fleetHost)
	if err != nil {
		t.Fatal(err)
	}
	return r[agent].Pane
}

// hookEvents counts the events agent's hooks appended.
func (h *secureHost) hookEvents(t *testing.T, auth nats.Option, agent string) int {
	t.Helper()
	n := 0
	for _, ev := range readLogWith(t, h.natsURL, auth) {
		if ev.Subject == agent && strings.HasSuffix(ev.Source, "/hook") {
			n++
		}
	}
	return n
}

// readLogWith reads the whole log from url as the identity auth.
func readLogWith(t *testing.T, url string, auth nats.Option) []events.Event {
	t.Helper()
	js := connectJS(t, url, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []events.Event
	for ev, err := range events.New(js, events.Options{}).Read(ctx, events.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// natsTool is the nats CLI's path, or "" (locally) when it is missing.
func natsTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("nats is not on PATH; .ci/run must install it")
	}
	t.Log("nats CLI not on PATH: its checks are skipped")
	return ""
}

// runNats runs the nats CLI against url with a fresh home (no contexts).
func runNats(ctx context.Context, t *testing.T, natsBin, url string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, natsBin, append([]string{"--server", url}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustNats is runNats for a command that must succeed: it fails the test
// otherwise.
func mustNats(ctx context.Context, t *testing.T, natsBin, url string, args ...string) string {
	t.Helper()
	out, err := runNats(ctx, t, natsBin, url, args...)
	if err != nil {
		t.Fatalf("nats %v: %v\n%s", args, err, out)
	}
	return out
}

// publicKey is the public nkey of a seed file.
func publicKey(t *testing.T, seedFile string) string {
	t.Helper()
	b, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// docs/security.md's secure cluster: three members under `fleetd auth`, each
// with its own gateway key. Their routes authenticate with the secret in
// server.conf, the members wait until the admin's `fleetd provision` has
// placed the R3 streams, and then turns cross hosts — direct and through
// a role queue — with every gateway running under exactly its
// permissions.
func TestTheSecureClusterUnderFleetdAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-host cluster")
	}
	dir := t.TempDir()
	if err := (&AuthCmd{Dir: dir, Hosts: []string{"h1", "h2", "h3"}, Agents: []string{"h1:w-1", "h3:w-3"}}).Run(); err != nil {
		t.Fatal(err)
	}
	roles := clusterRoles(t, 10*time.Millisecond, map[string]int{"w": 0})
	f := launchFleet(t, 3, roles, "--server-config", filepath.Join(dir, "server.conf"), "--creds", filepath.Join(dir, "gateway-{host}.nk"))
	h1, h3 := f.hosts[0], f.hosts[2]
	for _, h := range f.hosts {
		checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
			if out := h.up.Output(); !strings.Contains(out, "waiting for the fabric to be provisioned") {
				return fmt.Errorf("%s does not wait to be provisioned:\n%s", h.name, out)
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := (&ProvisionCmd{Roles: roles}).Run(ctx, &Globals{NATS: h1.natsURL, Creds: filepath.Join(dir, "admin.nk"), LogLevel: "error"}); err != nil {
		t.Fatalf("fleetd provision: %v", err)
	}
	for _, h := range f.hosts {
		waitLaunched(t, h.up, 90*time.Second)
	}
	adminOpt, err := natsauth.ConnectOption(filepath.Join(dir, "admin.nk"))
	if err != nil {
		t.Fatal(err)
	}
	ajs := connectJS(t, h1.natsURL, adminOpt)
	if s, err := ajs.Stream(ctx, events.Stream); err != nil || s.CachedInfo().Config.Replicas != 3 {
		t.Errorf("FLEET as provisioned: %v", err)
	}

	for _, spawn := range []struct {
		h     *fleetHost
		agent string
	}{{h1, "w-1"}, {h3, "w-3"}} {
		g := &Globals{Host: spawn.h.name, NATS: spawn.h.natsURL, URL: spawn.h.httpURL, LogLevel: "error",
			Creds: filepath.Join(dir, "gateway-"+spawn.h.name+".nk")}
		cmd := &SpawnCmd{Role: "w", Name: spawn.agent, herdrFlags: herdrFlags{Roles: roles, Herdr: spawn.h.sock, DataDir: spawn.h.data}}
		if err := cmd.Run(ctx, g); err != nil {
			t.Fatalf("spawn %s on %s: %v", spawn.agent, spawn.h.name, err)
		}
	}
	waitRoster(t, h1, 60*time.Second, "w-1 and w-3 idle", allIdle("w-1", "w-3"))
	env, err := send(ctx, h1, "w-3", "from h1 to h3")
	if err != nil || env.Reply != "SIM: from h1 to h3" {
		t.Fatalf("a turn across hosts: %+v, %v", env, err)
	}
	for i := range 2 {
		text := fmt.Sprint("role turn ", i)
		env, err := send(ctx, f.hosts[1], "role:w", text)
		if err != nil || env.Reply != "SIM: "+text {
			t.Fatalf("a role turn from h2: %+v, %v", env, err)
		}
	}
	// Every gateway ran under exactly its permissions: beyond its one try
	// to provision, NATS refused it nothing.
	for _, h := range f.hosts {
		out := h.up.Output()
		pub := publicKey(t, filepath.Join(dir, "gateway-"+h.name+".nk"))
		tries := 0
		for _, line := range strings.Split(out, "\n") {
			switch {
			case !strings.Contains(line, "Violation") || !strings.Contains(line, pub):
			case strings.Contains(line, `Subject \"$JS.API.STREAM.UPDATE.FLEET\"`) && tries == 0:
				tries++
			default:
				t.Errorf("%s's gateway was refused: %s", h.name, line)
			}
		}
		if strings.Contains(out, "NATS refused a request") || strings.Contains(out, "replayed spooled hook events") {
			t.Errorf("%s: a refused request or spooled hook events:\n%s", h.name, out)
		}
	}
}
