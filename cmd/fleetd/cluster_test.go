package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/router"
)

// These tests run whole fleets as processes on loopback: per host one
// `fleetd dev-herdr` (real PTY panes) and one `fleetd up`, clustered with
// the others, and simulated agents that fire the real hooks.

// fleetHost is one host of a test fleet.
type fleetHost struct {
	name    string
	data    string // fleetd up's data dir
	sock    string // its herdr socket
	natsURL string
	httpURL string
	token   string   // the lead shim's bearer token, if it has one
	args    []string // fleetd up's argv, to restart it as it was
	up      *upProcess
	herdr   *upProcess
}

// testFleet is a cluster of hosts sharing one roles file.
type testFleet struct {
	t     *testing.T
	hosts []*fleetHost
	roles string
}

// clusterRoles writes a roles file whose roles run the simulated agent
// (thinking think per turn), with the given caps.
func clusterRoles(t *testing.T, think time.Duration, caps map[string]int) string {
	t.Helper()
	rs := map[string]any{}
	for role, limit := range caps {
		rs[role] = map[string]any{
			"command": []string{fleetdBin, "sim-agent", "--think", think.String()},
			"env":     map[string]string{"HERDR_AGENT": "claude"},
			"cap":     limit,
		}
	}
	path := filepath.Join(t.TempDir(), "roles.json")
	writeJSONFile(t, path, map[string]any{"roles": rs})
	return path
}

// startFleet starts n clustered hosts h1…hn and waits until every one
// serves. Their logs are printed if the test fails.
func startFleet(t *testing.T, n int, rolesFile string, extra ...string) *testFleet {
	t.Helper()
	f := launchFleet(t, n, rolesFile, extra...)
	for _, h := range f.hosts {
		waitLaunched(t, h.up, 90*time.Second)
	}
	return f
}

// launchFleet starts n clustered hosts h1…hn without waiting for them to
// serve. "{host}" in extra stands for each host's name.
func launchFleet(t *testing.T, n int, rolesFile string, extra ...string) *testFleet {
	t.Helper()
	return launchFleetWith(t, n, rolesFile, nil, extra...)
}

// launchFleetWith is launchFleet with the hosts whose index agentapi
// names running their agents under agentapi (fleetd up --runtime
// agentapi, no dev-herdr).
func launchFleetWith(t *testing.T, n int, rolesFile string, agentapiHosts map[int]bool, extra ...string) *testFleet {
	t.Helper()
	// Unix socket paths must stay short: not under t.TempDir().
	sockDir, err := os.MkdirTemp("", "f6-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	f := &testFleet{t: t, roles: rolesFile}
	// All ports at once, so none is handed out twice (a port freePort
	// returned is free again for the next call).
	ports := natstest.FreePorts(t, 3*n)
	clusterPorts := ports[:n]
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i])
	}
	for i := range n {
		natsPort, httpPort := ports[n+2*i], ports[n+2*i+1]
		h := &fleetHost{
			name:    fmt.Sprintf("h%d", i+1),
			data:    filepath.Join(t.TempDir(), "data"),
			sock:    filepath.Join(sockDir, fmt.Sprintf("h%d.sock", i+1)),
			natsURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort),
			httpURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		}
		h.args = []string{"up", "--host", h.name, "--data-dir", h.data,
			"--listen", fmt.Sprintf("127.0.0.1:%d", natsPort), "--http", fmt.Sprintf("127.0.0.1:%d", httpPort),
			"--herdr", h.sock, "--roles", rolesFile,
			"--cluster", "f6", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", clusterPorts[i]),
			"--routes", strings.Join(routes, ","),
			"--heartbeat", "500ms", "--host-ttl", "2s"}
		for _, a := range extra {
			h.args = append(h.args, strings.ReplaceAll(a, "{host}", h.name))
		}
		if agentapiHosts[i] {
			h.sock = agentapiHostSocket(h.data)
			h.args = slices.DeleteFunc(h.args, func(a string) bool { return a == "--herdr" || strings.HasSuffix(a, ".sock") })
			h.args = append(h.args, "--runtime", "agentapi")
			t.Cleanup(func() {
				out, err := exec.Command(fleetdBin, "agentapi-host", "--stop", "--socket", h.sock).CombinedOutput()
				if err != nil {
					t.Logf("stop %s's agentapi host: %v: %s", h.name, err, out)
				}
			})
		}
		f.hosts = append(f.hosts, h)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range f.hosts {
				t.Logf("---- fleetd up %s ----\n%s", h.name, h.up.Output())
			}
		}
	})
	for i, h := range f.hosts {
		if !agentapiHosts[i] {
			h.herdr = launch(t, "herdr-protocol server", "dev-herdr", "--socket", h.sock)
		}
	}
	for _, h := range f.hosts {
		if h.herdr != nil {
			waitLaunched(t, h.herdr, 10*time.Second)
		}
	}
	// Members wait for each other (a meta leader needs a quorum): start
	// them all, then wait.
	for _, h := range f.hosts {
		h.up = launch(t, "up on host", h.args...)
	}
	return f
}

// restart starts h's fleetd up again with the same flags and data dir.
func (f *testFleet) restart(h *fleetHost) {
	f.t.Helper()
	old := h.up
	h.up = launch(f.t, "up on host", h.args...)
	h.up.mu.Lock()
	h.up.output.WriteString("---- (earlier run) ----\n" + old.Output() + "---- (restarted) ----\n")
	h.up.mu.Unlock()
	waitLaunched(f.t, h.up, 90*time.Second)
}

// spawn starts agent of role in a pane of h's herdr, as `fleetd spawn`
// run on h does. It names no host, as docs/clusters.md's cluster example does
// not: the agent must land on the host whose gateway drives that herdr.
func (f *testFleet) spawn(h *fleetHost, role, agent string) {
	f.t.Helper()
	g := &Globals{NATS: h.natsURL, URL: h.httpURL, LogLevel: "error"}
	flags := herdrFlags{Roles: f.roles, Herdr: h.sock, DataDir: h.data}
	if h.herdr == nil {
		flags.Herdr, flags.Runtime = "", runtimeAgentapi
	}
	cmd := &SpawnCmd{Role: role, Name: agent, herdrFlags: flags}
	if err := cmd.Run(context.Background(), g); err != nil {
		f.t.Fatalf("spawn %s on %s: %v", agent, h.name, err)
	}
}

// spawnEach spawns n agents of role on every host (w-<host>-<i>) and waits
// until the first host's roster shows them all idle; it returns them and
// each one's host.
func (f *testFleet) spawnEach(n int, role string) (agents []string, hostOf map[string]string) {
	f.t.Helper()
	hostOf = map[string]string{}
	for _, h := range f.hosts {
		for j := range n {
			a := fmt.Sprintf("%s-%s-%d", role, h.name, j)
			f.spawn(h, role, a)
			agents = append(agents, a)
			hostOf[a] = h.name
		}
	}
	waitRoster(f.t, f.hosts[0], 30*time.Second, fmt.Sprintf("%d agents idle", len(agents)), allIdle(agents...))
	return agents, hostOf
}

// phases returns a logger of a long test's phases, each with the seconds
// since the test began.
func phases(t *testing.T) func(what string) {
	began := time.Now()
	return func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
}

// roster reads h's roster over its lead shim.
func roster(ctx context.Context, h *fleetHost) (map[string]projections.Agent, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.httpURL+"/roster", nil)
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rows []projections.Agent
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return nil, err
	}
	out := map[string]projections.Agent{}
	for _, a := range rows {
		out[a.Agent] = a
	}
	return out, nil
}

// waitRoster polls h's roster until ok holds for it.
func waitRoster(t *testing.T, h *fleetHost, limit time.Duration, what string, ok func(map[string]projections.Agent) bool) {
	t.Helper()
	checkfor.Eventually(t, limit, 100*time.Millisecond, func() error {
		r, err := roster(context.Background(), h)
		if err != nil {
			return fmt.Errorf("%s: roster at %s: %w", what, h.name, err)
		}
		if !ok(r) {
			return fmt.Errorf("%s: roster at %s: %+v", what, h.name, r)
		}
		return nil
	})
}

// allIdle: every one of agents is listed, idle and not stale.
func allIdle(agents ...string) func(map[string]projections.Agent) bool {
	return func(r map[string]projections.Agent) bool {
		for _, a := range agents {
			if row, ok := r[a]; !ok || !row.Ready() {
				return false
			}
		}
		return true
	}
}

// do sends req to h's lead shim, with its token if it has one.
func (h *fleetHost) do(req *http.Request) (*http.Response, error) {
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	return http.DefaultClient.Do(req)
}

// send posts a blocking turn to h's lead shim.
func send(ctx context.Context, h *fleetHost, to, text string) (leadshim.Envelope, error) {
	body, _ := json.Marshal(map[string]any{"to": to, "text": text, "from": "test", "timeout": "90s"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.httpURL+"/message", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.do(req)
	if err != nil {
		return leadshim.Envelope{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return leadshim.Envelope{}, fmt.Errorf("POST /message to %s at %s: %s: %s", to, h.name, resp.Status, b)
	}
	var env leadshim.Envelope
	return env, json.Unmarshal(b, &env)
}

// sendAsync posts a turn to h's lead shim without waiting: its id.
func sendAsync(ctx context.Context, h *fleetHost, to, text string) (string, error) {
	body, _ := json.Marshal(map[string]any{"to": to, "text": text, "from": "test", "timeout": "90s", "wait": false})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.httpURL+"/message", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var acc leadshim.Accepted
	if err := json.NewDecoder(resp.Body).Decode(&acc); err != nil || resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /message (no wait) at %s: %s %v", h.name, resp.Status, err)
	}
	return acc.ID, nil
}

// turnAt reads turn id from h's lead shim, long-polling up to wait.
func turnAt(ctx context.Context, h *fleetHost, id, wait string) (leadshim.Envelope, error) {
	url := h.httpURL + "/message/" + id
	if wait != "" {
		url += "?wait=" + wait
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := h.do(req)
	if err != nil {
		return leadshim.Envelope{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return leadshim.Envelope{}, err
	}
	var env leadshim.Envelope
	if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != http.StatusOK {
		return env, fmt.Errorf("GET /message/%s at %s: %s %v: %s", id, h.name, resp.Status, err, body)
	}
	return env, nil
}

// readLog reads the whole log from url.
func readLog(t *testing.T, url string) []events.Event {
	t.Helper()
	log, _ := connectLog(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []events.Event
	for ev, err := range log.Read(ctx, events.Query{}) {
		if err != nil {
			t.Fatalf("read the log at %s: %v", url, err)
		}
		out = append(out, ev)
	}
	return out
}

// sourceHost is the host token of an event's source, fleetd/<host>/<part>.
func sourceHost(ev events.Event) string {
	parts := strings.Split(ev.Source, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// checkOwnership fails the test if any turn was typed by a gateway other
// than its agent's host's, or typed twice.
func checkOwnership(t *testing.T, evs []events.Event) (typedBy map[string]string) {
	t.Helper()
	hostOf := map[string]string{}
	typedBy = map[string]string{}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case events.AgentRegistered:
			hostOf[d.Agent] = d.Host
		case events.AgentTyped:
			id := lifecycle.TurnID(ev)
			if got, want := sourceHost(ev), hostOf[ev.Subject]; got != want {
				t.Errorf("turn %s for %s (host %s) was typed (enter %d) by %s", id, ev.Subject, want, d.Enter, ev.Source)
			}
			if d.Enter > 0 {
				continue // the one extra Enter of an unconfirmed turn
			}
			if prev, twice := typedBy[id]; twice {
				t.Errorf("turn %s typed twice (by %s, then %s); its events:\n%s", id, prev, ev.Source, turnEvents(evs, id))
			}
			typedBy[id] = sourceHost(ev)
		}
	}
	return typedBy
}

// turnEvents lists the events of turn id in evs, one a line, for a
// failure message.
func turnEvents(evs []events.Event, id string) string {
	var b strings.Builder
	for _, ev := range evs {
		if lifecycle.TurnID(ev) == id {
			fmt.Fprintf(&b, "  #%d %s %s %s %+v\n", ev.Seq, ev.NATSSubject, ev.Source, ev.Time.Format("15:04:05.000"), ev.Data)
		}
	}
	return b.String()
}

// A role turn sent at h1 is carried by the log to an idle agent of the
// role on h3 and typed by h3's gateway alone; a direct turn for an agent
// on h2 is typed by h2. The stream and the buckets are R3. A host that
// goes silent (SIGSTOP) has its agents marked stale, not deleted, and they
// come back with it.
func TestClusterCarriesTurnsToTheOwningHostAndMarksASilentHostStale(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet")
	}
	roles := clusterRoles(t, 50*time.Millisecond, map[string]int{"w": 2, "v": 0})
	f := startFleet(t, 3, roles)
	h1, h2, h3 := f.hosts[0], f.hosts[1], f.hosts[2]
	f.spawn(h1, "v", "v-1")
	f.spawn(h2, "v", "v-2")
	f.spawn(h3, "w", "w-3")
	waitRoster(t, h1, 30*time.Second, "agents of three hosts idle in h1's roster", allIdle("v-1", "v-2", "w-3"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("the stream and the projection buckets are replicated on three nodes", func(t *testing.T) {
		js := connectJS(t, h2.natsURL)
		for _, name := range []string{events.Stream, "KV_" + projections.BucketRoster, "KV_" + projections.BucketTurns} {
			s, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info := s.CachedInfo()
			if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
				t.Errorf("%s: replicas %d, cluster %+v", name, info.Config.Replicas, info.Cluster)
			}
		}
	})

	t.Run("a role turn sent at h1 is served by the idle agent on h3", func(t *testing.T) {
		env, err := send(ctx, h1, "role:w", "across hosts")
		if err != nil {
			t.Fatal(err)
		}
		if env.Agent != "w-3" || env.Reply != "SIM: across hosts" || env.Status != "replied" {
			t.Errorf("reply %+v", env)
		}
		env, err = send(ctx, h1, "v-2", "to h2")
		if err != nil {
			t.Fatal(err)
		}
		if env.Agent != "v-2" || env.Reply != "SIM: to h2" {
			t.Errorf("direct reply %+v", env)
		}
		evs := readLog(t, h2.natsURL)
		typedBy := checkOwnership(t, evs)
		for _, ev := range evs {
			if rq, ok := ev.Data.(events.RoleQueued); ok && rq.Text == "across hosts" {
				if sourceHost(ev) != "h1" {
					t.Errorf("role turn queued by %s, want h1's shim", ev.Source)
				}
				if typedBy[ev.ID] != "h3" {
					t.Errorf("role turn typed by %q, want h3", typedBy[ev.ID])
				}
			}
		}
	})

	t.Run("a silent host's agents turn stale and come back", func(t *testing.T) {
		phase := phases(t)
		if err := h3.up.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := true
		defer func() {
			if stopped {
				h3.up.cmd.Process.Signal(syscall.SIGCONT)
			}
		}()
		waitRoster(t, h1, 20*time.Second, "h3's agent stale at h1", func(r map[string]projections.Agent) bool {
			return r["w-3"].Stale && !r["v-1"].Stale && !r["v-2"].Stale
		})
		// h2 may fold later than h1: its reader's consumer may have been
		// placed on h3, and is made again after two missed heartbeats
		// (events' reader), and that waits for a meta leader if h3 led.
		waitRoster(t, h2, 20*time.Second, "h3's agent stale at h2", func(r map[string]projections.Agent) bool { return r["w-3"].Stale })
		phase("h3 stopped; its agent is stale at h1 and h2")
		// JetStream moves the leadership h3 held (of FLEET, of a bucket)
		// to h1 or h2 only after its election timeout; until then writes
		// and reads there wait. A host going silent is not a test of
		// Raft's timing: wait until every stream has a live leader.
		waitLeaders(t, ctx, h1, "h3", 60*time.Second)
		phase("every stream is led by h1 or h2")
		// Stale agents get no role turns: one sent now waits for h3.
		id, err := sendAsync(ctx, h1, "role:w", "after the pause")
		if err != nil {
			t.Fatal(err)
		}
		// h1 may answer from the shared turns bucket before its own fold
		// has the turn, and a read of that bucket can fail while its
		// leadership settles after h3 went silent: a 503 is asked again.
		// What may never happen is the turn going to an agent.
		checkfor.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
			env, err := turnAt(ctx, h1, id, "1s")
			switch {
			case err != nil || env.Status == "":
				return fmt.Errorf("h1 does not know the role turn: %+v, %v", env, err)
			case env.Status != "queued" || env.Agent != "":
				t.Fatalf("a role turn with only a stale agent of the role: %+v", env)
			}
			return nil
		})
		if err := h3.up.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopped = false
		waitRoster(t, h1, 30*time.Second, "h3's agent back at h1", func(r map[string]projections.Agent) bool { return !r["w-3"].Stale })
		phase("h3 continued; its agent is back at h1")
		env, err := turnAt(ctx, h1, id, "60s")
		if err != nil || env.Status != "replied" || env.Agent != "w-3" || env.Reply != "SIM: after the pause" {
			t.Errorf("the role turn sent while h3 was silent: %+v, %v", env, err)
		}
		phase("the role turn sent while h3 was silent is served")
	})
}

// With cap 2 for the role and six agents on three hosts, twelve role
// turns sent at once at all three shims never have more than two turns
// of the role assigned-and-not-final at any point of the log.
func TestClusterRoleCapHoldsAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet")
	}
	f := startFleet(t, 3, clusterRoles(t, 100*time.Millisecond, map[string]int{"w": 2}))
	f.spawnEach(2, "w")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fanOutRole(t, ctx, f.hosts, "w", 12)

	evs := readLog(t, f.hosts[1].natsURL)
	typedBy := checkOwnership(t, evs)
	book := lifecycle.NewBook()
	open, inFlight := map[string]bool{}, map[string]bool{}
	maxOpen, maxInFlight := 0, 0
	servedOn := map[string]int{}
	for _, ev := range evs {
		tr, ok := book.Apply(ev)
		if !ok || tr.Role != "w" {
			continue
		}
		open[tr.ID] = tr.Agent != "" && !tr.State.Final()
		inFlight[tr.ID] = tr.State.InFlight()
		if tr.State == lifecycle.StateReplied {
			servedOn[typedBy[tr.ID]]++
		}
		maxOpen = max(maxOpen, count(open))
		maxInFlight = max(maxInFlight, count(inFlight))
	}
	if maxInFlight != 2 || maxOpen != 2 {
		t.Errorf("at most %d role turns typed-not-final and %d assigned-not-final at once; want exactly the cap, 2", maxInFlight, maxOpen)
	}
	if n := servedOn["h1"] + servedOn["h2"] + servedOn["h3"]; n != 12 || len(servedOn) < 2 {
		t.Errorf("replied turns per host %v: want 12 spread over more than one host", servedOn)
	}
	t.Logf("role turns served per host: %v", servedOn)
}

// A fleet may mix runtimes across hosts: a role's fan-out is served by
// agents in herdr panes on one host and under agentapi on another, each
// turn typed once by its agent's own host.
func TestClusterRoleFanOutAcrossAHerdrHostAndAnAgentapiHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a two-host fleet")
	}
	requireAgentapi(t)
	f := launchFleetWith(t, 2, clusterRoles(t, 200*time.Millisecond, map[string]int{"w": 4}), map[int]bool{1: true}, "--replicas", "2")
	for _, h := range f.hosts {
		waitLaunched(t, h.up, 90*time.Second)
	}
	if !strings.Contains(f.hosts[1].up.Output(), "agents: under agentapi") {
		t.Fatalf("h2 does not say it runs its agents under agentapi:\n%s", f.hosts[1].up.Output())
	}
	f.spawnEach(2, "w")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fanOutRole(t, ctx, f.hosts, "w", 12)
	evs := readLog(t, f.hosts[0].natsURL)
	typedBy := checkOwnership(t, evs)
	servedOn := map[string]int{}
	book := lifecycle.NewBook()
	for _, ev := range evs {
		if tr, ok := book.Apply(ev); ok && tr.Role == "w" && tr.State == lifecycle.StateReplied {
			servedOn[typedBy[tr.ID]]++
		}
	}
	if servedOn["h1"] == 0 || servedOn["h2"] == 0 || servedOn["h1"]+servedOn["h2"] != 12 {
		t.Errorf("replied role turns per host %v: want all 12, on both the herdr host (h1) and the agentapi host (h2)", servedOn)
	}
	t.Logf("role turns served per host: %v", servedOn)
}

// fanOutRole sends n turns to role at once, spread over the hosts' shims,
// and fails the test for each that does not get the simulated agent's
// reply.
func fanOutRole(t *testing.T, ctx context.Context, hosts []*fleetHost, role string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		h := hosts[i%len(hosts)]
		wg.Go(func() {
			env, err := send(ctx, h, "role:"+role, fmt.Sprint("job ", i))
			if err == nil && env.Reply != fmt.Sprint("SIM: job ", i) {
				err = fmt.Errorf("job %d: reply %+v", i, env)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func count(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// turnWatch folds the log, as one node serves it, into a lifecycle.Book.
type turnWatch struct {
	mu   sync.Mutex
	book *lifecycle.Book
	err  error
}

// watchTurns follows the log at url until the test ends.
func watchTurns(t *testing.T, url string) *turnWatch {
	t.Helper()
	log, _ := connectLog(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	fw, err := log.Follow(ctx, events.Query{})
	if err != nil {
		t.Fatal(err)
	}
	w := &turnWatch{book: lifecycle.NewBook()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range fw.Events() {
			w.mu.Lock()
			w.book.Apply(ev)
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.err = fw.Err()
		w.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); fw.Stop(); <-done })
	return w
}

// final counts the turns among ids that are final, and lists the others.
func (w *turnWatch) final(ids []string) (done int, open []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if tr, ok := w.book.Turn(id); ok && tr.State.Final() {
			done++
		} else {
			open = append(open, fmt.Sprintf("%s(%s %s)", id, tr.Agent, tr.State))
		}
	}
	return done, open
}

// waitFinal waits until at least want of ids are final; a timeout says
// what was awaited, the open turns and what explain (costly, so only
// then) diagnoses.
func (w *turnWatch) waitFinal(t *testing.T, total time.Duration, what string, ids []string, want int, explain func() string) {
	t.Helper()
	err := checkfor.Poll(total, 250*time.Millisecond, func() error {
		if done, open := w.final(ids); done < want {
			return fmt.Errorf("%d of %d final, want %d; %d open: %v", done, len(ids), want, len(open), open)
		}
		return nil
	})
	if err != nil {
		diagnosis := ""
		if explain != nil {
			diagnosis = explain()
		}
		t.Fatalf("%s: %v\n%s", what, err, diagnosis)
	}
}

// waitAssigned waits until every turn in ids is assigned to an agent, and
// returns the longest time the queue stood still after since: between
// since and the first assignment, or between two assignments.
func (w *turnWatch) waitAssigned(t *testing.T, total time.Duration, what string, ids []string, since time.Time) time.Duration {
	t.Helper()
	var at []time.Time
	err := checkfor.Poll(total, 250*time.Millisecond, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		at = at[:0]
		var open []string
		for _, id := range ids {
			if tr, ok := w.book.Turn(id); ok && !tr.AssignedAt.IsZero() {
				at = append(at, tr.AssignedAt)
			} else {
				open = append(open, id)
			}
		}
		if len(open) > 0 {
			return fmt.Errorf("%d of %d not assigned: %v", len(open), len(ids), open)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	slices.SortFunc(at, time.Time.Compare)
	var gap time.Duration
	prev := since
	for _, a := range at {
		gap = max(gap, a.Sub(prev))
		if a.After(prev) {
			prev = a
		}
	}
	return gap
}

func (w *turnWatch) turn(id string) lifecycle.Turn {
	w.mu.Lock()
	defer w.mu.Unlock()
	tr, _ := w.book.Turn(id)
	return tr
}

// SIGKILL of one of three nodes while 200 turns are in flight: every
// append the fabric acknowledged — before and after the kill — is in the
// log read back from a surviving node, the other hosts keep serving, and
// once the killed host restarts every turn resolves: replied, or failed
// with a reason. None is typed twice or by a foreign gateway.
func TestClusterSIGKILLOfANodeLosesNoAcknowledgedEventAndEveryTurnResolves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet and runs 200 turns")
	}
	phase := phases(t)
	// Without fsync per write: a SIGKILL leaves the page cache alone, and
	// what this test proves is that the replicas carry every ack
	// (TestUpSurvivesSIGKILLWithEveryAcknowledgedEvent covers SyncAlways).
	// It makes the 200 turns affordable on a small machine.
	f := startFleet(t, 3, clusterRoles(t, 10*time.Millisecond, map[string]int{"w": 0}), "--no-sync-always")
	phase("fleet up")
	agents, hostOf := f.spawnEach(3, "w")
	h1, h2, h3 := f.hosts[0], f.hosts[1], f.hosts[2]
	phase("agents idle")
	watch := watchTurns(t, h2.natsURL)

	log, _ := connectLog(t, h1.natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	acked := map[string]bool{}
	var turns, survivors []string // survivors: direct turns for h1's and h2's agents
	var roleAfterKill []string    // role turns queued while h3 is down
	var roleTurns []string        // every role turn
	killed := false
	appendTurn := func(i int) {
		id := ulid.Make().String()
		text := fmt.Sprintf("turn %03d", i)
		ev := events.Event{ID: id, CorrelationID: id, Subject: "w", Data: events.RoleQueued{From: "test", Text: text}}
		if i%4 != 3 {
			ev.Subject = agents[i%len(agents)]
			ev.Data = events.AgentQueued{From: "test", Text: text}
		}
		// A retry of the same event id is a no-op, so retry until the
		// cluster (perhaps electing a new stream leader) acknowledges.
		for {
			actx, acancel := context.WithTimeout(ctx, 3*time.Second)
			ack, err := log.Append(actx, ev)
			acancel()
			if err == nil {
				acked[ack.ID] = true
				turns = append(turns, id)
				if _, direct := ev.Data.(events.AgentQueued); direct && hostOf[ev.Subject] != "h3" {
					survivors = append(survivors, id)
				} else if !direct && killed {
					roleAfterKill = append(roleAfterKill, id)
				}
				if _, role := ev.Data.(events.RoleQueued); role {
					roleTurns = append(roleTurns, id)
				}
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("append turn %d: %v", i, err)
			}
		}
	}
	for i := range 100 {
		appendTurn(i)
	}
	watch.waitFinal(t, 2*time.Minute, "turns replied before the kill", turns, 12, nil)
	phase("12 turns replied")

	if err := h3.up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h3.up.cmd.Wait()
	killedAt, killed := time.Now(), true
	for i := 100; i < 200; i++ {
		appendTurn(i)
	}
	done, _ := watch.final(turns)
	phase(fmt.Sprintf("killed h3 with %d of 200 turns final; appended the second 100 in %v", done, time.Since(killedAt).Round(time.Millisecond)))

	// The surviving hosts keep serving their own agents' turns; h3's
	// agents are marked stale. (h3 restarts once that is seen, not after
	// all of them: the rest overlaps its catching up.)
	resolvedBefore, _ := watch.final(survivors)
	watch.waitFinal(t, 3*time.Minute, "h1 and h2 keep resolving their direct turns while h3 is down",
		survivors, min(len(survivors), resolvedBefore+30), func() string { return diagnose(t, f, agents) })
	waitRoster(t, h1, 10*time.Second, "h3's agents stale at h1", func(r map[string]projections.Agent) bool {
		return r["w-h3-0"].Stale && r["w-h3-1"].Stale && !r["w-h1-0"].Stale
	})
	done, _ = watch.final(turns)
	phase(fmt.Sprintf("h1 and h2 resolved 30 more direct turns, %d of 200 in all; h3's agents stale", done))

	// Role dispatch goes on without h3: every role turn queued after the
	// kill is assigned before h3 is back. h3's router may have held the
	// head of the queue when it died; the server hands it on after the
	// router's ack wait, which its keep-alives make short, not after 30 s
	// (and a pull request the dead router left behind expires as soon):
	// ~7-14 s here, where the old 30 s hold and pull expiry gave 31 s.
	gap := watch.waitAssigned(t, 2*time.Minute, "role turns queued while h3 is down are assigned", roleAfterKill, killedAt)
	phase(fmt.Sprintf("%d role turns queued after the kill all assigned; longest wait for the role queue to move: %v", len(roleAfterKill), gap.Round(time.Millisecond)))
	if gap > 25*time.Second {
		t.Errorf("the role queue stood still for %v after h3 died (the router's ack wait is %v)", gap, router.DefaultAckWait)
	}

	// Role turns that h3's agents had been assigned but not typed when it
	// died do not wait for it: the surviving routers release them to
	// the role, and the other hosts take them. Only turns typed on h3
	// (their outcome is h3's to tell) stay with it.
	onH3 := func() (queued []string, released int) {
		for _, id := range roleTurns {
			tr := watch.turn(id)
			if tr.State == lifecycle.StateQueued && hostOf[tr.Agent] == "h3" {
				queued = append(queued, id)
			}
			if tr.Releases > 0 {
				released++
			}
		}
		return queued, released
	}
	err := checkfor.Poll(2*time.Minute, 250*time.Millisecond, func() error {
		if queued, _ := onH3(); len(queued) > 0 {
			return fmt.Errorf("%d role turns still queued on h3's agents: %v", len(queued), queued)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("role turns assigned to the dead host's agents and never typed: %v\n%s", err, diagnose(t, f, agents))
	}
	_, released := onH3()
	phase(fmt.Sprintf("no role turn left queued on h3's agents; %d released to the other hosts", released))

	f.restart(h3)
	phase("h3 restarted")
	watch.waitFinal(t, 3*time.Minute, "every turn resolves after h3 restarts", turns, len(turns), func() string { return diagnose(t, f, agents) })
	phase("every turn resolved")

	evs := readLog(t, h2.natsURL)
	got := map[string]bool{}
	for _, ev := range evs {
		got[ev.ID] = true
	}
	for id := range acked {
		if !got[id] {
			t.Errorf("acknowledged event %s is not in the log after kill -9 of h3", id)
		}
	}
	typedBy := checkOwnership(t, evs)
	for _, id := range roleTurns {
		if tr := watch.turn(id); tr.Releases > 0 && tr.State == lifecycle.StateReplied && typedBy[id] == "h3" {
			t.Errorf("role turn %s released from %s was typed by h3 after all", id, tr.ReleasedFrom)
		}
	}
	outcomes := map[string]int{}
	for _, id := range turns {
		tr := watch.turn(id)
		if tr.State == lifecycle.StateFailed && tr.Reason == "" {
			t.Errorf("turn %s failed without a reason", id)
		}
		outcomes[strings.TrimSpace(string(tr.State)+" "+tr.Reason)]++
	}
	t.Logf("%d acknowledged appends, all read back from h2; outcomes: %v", len(acked), outcomes)
}

// diagnose describes agents as the roster of the first host and the tail
// of their events show them, for a failure message.
func diagnose(t *testing.T, f *testFleet, agents []string) string {
	var b strings.Builder
	r, err := roster(context.Background(), f.hosts[0])
	fmt.Fprintf(&b, "roster at h1 (%v):\n", err)
	for _, a := range agents {
		fmt.Fprintf(&b, "  %+v\n", r[a])
	}
	evs := readLog(t, f.hosts[1].natsURL)
	for _, a := range agents {
		var tail []string
		for _, ev := range evs {
			if ev.Subject == a && strings.HasPrefix(ev.NATSSubject, "fleet.agent.") {
				tail = append(tail, fmt.Sprintf("#%d %s %s %s %+v", ev.Seq, ev.Time.Format("15:04:05.000"), ev.Source, ev.NATSSubject, ev.Data))
			}
		}
		fmt.Fprintf(&b, "last events of %s:\n  %s\n", a, strings.Join(tail[max(0, len(tail)-8):], "\n  "))
	}
	return b.String()
}

// fleetd up works against an external NATS (--nats: no embedded server):
// a turn goes through its shim, its gateway and a simulated agent.
func TestUpAgainstAnExternalNATSServesTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up and an agent")
	}
	ext, h := upOnExternalNATS(t)
	env, err := send(context.Background(), h, "role:w", "over external nats")
	if err != nil || env.Reply != "SIM: over external nats" || env.Agent != "w-x" {
		t.Fatalf("reply %+v, %v", env, err)
	}
	if _, err := os.Stat(filepath.Join(h.data, "jetstream")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fleetd up --nats started a JetStream store of its own (%v)", err)
	}
	// The log lives in the external server.
	if _, err := ext.JS.Stream(context.Background(), events.Stream); err != nil {
		t.Errorf("no %s stream in the external server: %v", events.Stream, err)
	}
}

// An agent registered for a host whose gateway never came up (a typo'd
// --host, an old spawn) is owned by no one: HostTTL after it was
// registered it is shown stale, `fleetd roster` says why, role turns go
// to the live agent of its role and a turn sent to it by name is refused
// at once instead of waiting out its deadline.
func TestAnAgentOfAHostThatNeverCameUpIsShownStaleAndGetsNoTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up and an agent")
	}
	ext, h := upOnExternalNATS(t, "--heartbeat", "500ms", "--host-ttl", "2s")
	log := events.New(ext.JS, events.Options{Source: "fleetd/ghost/gateway"})
	for _, ev := range []events.Event{
		{Subject: "w-ghost", Data: events.AgentRegistered{Agent: "w-ghost", Host: "ghost", Pane: "p-ghost", Role: "w", Tier: 2, Origin: "spawned"}},
		{Subject: "w-ghost", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}},
	} {
		if _, err := log.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	waitRoster(t, h, 20*time.Second, "the agent of the unheard host stale", func(r map[string]projections.Agent) bool {
		return r["w-ghost"].Stale && !r["w-x"].Stale
	})
	out, err := exec.Command(fleetdBin, "roster", "--url", h.httpURL).CombinedOutput()
	if err != nil || !regexp.MustCompile(`w-ghost .*stale: its host is silent`).Match(out) {
		t.Errorf("fleetd roster: %v\n%s\nwant w-ghost shown stale", err, out)
	}
	for i := range 3 {
		env, err := send(context.Background(), h, "role:w", fmt.Sprintf("role turn %d", i))
		if err != nil || env.Agent != "w-x" {
			t.Fatalf("role turn %d: %+v, %v; want it served by w-x", i, env, err)
		}
	}
	_, err = send(context.Background(), h, "w-ghost", "hello")
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "host_unheard") || !strings.Contains(err.Error(), "fleetd up --host ghost") {
		t.Errorf("a turn to the agent of the unheard host: %v, want 409 host_unheard naming the host", err)
	}
}

// upOnExternalNATS starts a NATS server and `fleetd up --nats` against it
// (host hx, with extra flags), with one idle simulated agent w-x of role w.
func upOnExternalNATS(t *testing.T, extra ...string) (*natstest.Server, *fleetHost) {
	t.Helper()
	ext := natstest.Start(t, natstest.WithTCP())
	roles := clusterRoles(t, 10*time.Millisecond, map[string]int{"w": 0})
	sockDir, err := os.MkdirTemp("", "f6-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	httpPort := freePort(t)
	h := &fleetHost{name: "hx", data: t.TempDir(), sock: filepath.Join(sockDir, "hx.sock"),
		natsURL: ext.ClientURL(), httpURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
	h.herdr = launch(t, "herdr-protocol server", "dev-herdr", "--socket", h.sock)
	waitLaunched(t, h.herdr, 10*time.Second)
	h.up = launch(t, "up on host", append([]string{"up", "--nats", ext.ClientURL(), "--host", h.name, "--data-dir", h.data,
		"--http", fmt.Sprintf("127.0.0.1:%d", httpPort), "--herdr", h.sock, "--roles", roles}, extra...)...)
	waitLaunched(t, h.up, 30*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- fleetd up ----\n%s", h.up.Output())
		}
	})
	f := &testFleet{t: t, roles: roles, hosts: []*fleetHost{h}}
	f.spawn(h, "w", "w-x")
	waitRoster(t, h, 30*time.Second, "agent idle", allIdle("w-x"))
	return ext, h
}

// With the server config and credentials `fleetd auth` writes, fleetd up
// runs as its gateway user, and an agent's credentials may publish its
// own events but not another agent's: the server reports the violation
// and the event is not stored.
func TestAgentCredentialsCannotPublishAnotherAgentsEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	dir := t.TempDir()
	if err := (&AuthCmd{Dir: dir, Hosts: []string{"testhost"}, Agents: []string{"testhost:w-1", "testhost:w-2"}}).Run(); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "f6-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "herdr.sock")
	waitLaunched(t, launch(t, "herdr-protocol server", "dev-herdr", "--socket", sock), 10*time.Second)
	roles := clusterRoles(t, 10*time.Millisecond, map[string]int{"w": 0})
	gatewayCreds := filepath.Join(dir, "gateway-testhost.nk")
	data := t.TempDir()
	up := startUp(t, data, "--server-config", filepath.Join(dir, "server.conf"), "--creds", gatewayCreds,
		"--admin-creds", filepath.Join(dir, "admin.nk"), "--herdr", sock, "--roles", roles)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- fleetd up ----\n%s", up.Output())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if nc, err := nats.Connect(up.url); err == nil {
		nc.Close()
		t.Error("connected without credentials")
	}
	violations := make(chan error, 10)
	connectAs := func(name string) events.Log {
		opt, err := natsauth.ConnectOption(natsauth.KeyPath(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(up.url, opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			violations <- err
		}))
		if err != nil {
			t.Fatalf("connect as %s: %v", name, err)
		}
		t.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		return events.New(js, events.Options{Source: "fleetd/testhost/hook"})
	}
	agent := connectAs("agent-w-1")
	own, err := agent.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	if err != nil {
		t.Fatalf("an agent cannot publish its own status: %v", err)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	forged := events.Event{ID: ulid.Make().String(), Subject: "w-2", Data: events.AgentReplied{Reply: "forged"}}
	_, err = agent.Append(actx, forged)
	acancel()
	if err == nil {
		t.Fatal("w-1's credentials published w-2's reply")
	}
	select {
	case v := <-violations:
		if !errors.Is(v, nats.ErrPermissionViolation) || !strings.Contains(v.Error(), "fleet.agent.w-2.replied") {
			t.Errorf("violation reported as %v", v)
		}
	case <-time.After(5 * time.Second):
		t.Error("the server reported no permission violation")
	}

	// A pane gets its agent's own credentials, never the gateway's, and
	// its hooks carry a turn through with them.
	if got, want := gateway.PaneCreds(gatewayCreds)("w-2"), filepath.Join(dir, "agents", "agent-w-2.nk"); got != want {
		t.Errorf("w-2's pane gets credentials %q, want %q", got, want)
	}
	if got := gateway.PaneCreds(gatewayCreds)("w-9"); got != "" {
		t.Errorf("an agent without credentials of its own gets %q", got)
	}
	if got, want := gateway.PaneCreds(filepath.Join(dir, "admin.nk"))("w-2"), filepath.Join(dir, "agents", "agent-w-2.nk"); got != want {
		t.Errorf("w-2's pane of a process run with the admin's key gets %q, want %q", got, want)
	}
	h := &fleetHost{name: "testhost", data: data, sock: sock, natsURL: up.url, httpURL: up.http}
	g := &Globals{Host: h.name, NATS: h.natsURL, URL: h.httpURL, Creds: gatewayCreds, LogLevel: "error"}
	spawn := &SpawnCmd{Role: "w", Name: "w-2", herdrFlags: herdrFlags{Roles: roles, Herdr: sock, DataDir: data}}
	if err := spawn.Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitRoster(t, h, 20*time.Second, "w-2 idle", allIdle("w-2"))
	env, err := send(ctx, h, "w-2", "under auth")
	if err != nil || env.Reply != "SIM: under auth" {
		t.Fatalf("a turn under auth: %+v, %v", env, err)
	}

	admin := connectAs("admin")
	var w1 []string
	forgedStored := false
	hookOfW2 := 0
	for ev, err := range admin.Read(ctx, events.Query{Subjects: []string{"fleet.agent.>"}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.ID == forged.ID:
			forgedStored = true
		case ev.Subject == "w-1":
			w1 = append(w1, ev.ID)
		case ev.Subject == "w-2" && strings.HasSuffix(ev.Source, "/hook"):
			hookOfW2++
		}
	}
	if forgedStored || len(w1) != 1 || w1[0] != own.ID {
		t.Errorf("forged event stored: %v; w-1's events %v, want only its own %s", forgedStored, w1, own.ID)
	}
	if hookOfW2 == 0 {
		t.Error("w-2's hooks appended nothing under auth")
	}
	// The gateway itself runs under its own user: it announced its host.
	hosts := 0
	for _, err := range admin.Read(ctx, events.Query{Subjects: []string{"fleet.host.testhost.up"}}) {
		if err != nil {
			t.Fatal(err)
		}
		hosts++
	}
	if hosts == 0 {
		t.Error("the gateway did not announce its host under its credentials")
	}
}

// waitLeaders waits until FLEET and every projection bucket, asked at h,
// have a leader and it is not the server named gone.
func waitLeaders(t *testing.T, ctx context.Context, h *fleetHost, gone string, limit time.Duration) {
	t.Helper()
	js := connectJS(t, h.natsURL)
	streams := []string{events.Stream}
	for _, b := range []string{projections.BucketRoster, projections.BucketSessions, projections.BucketTurns, projections.BucketCheckpoints} {
		streams = append(streams, "KV_"+b)
	}
	checkfor.Eventually(t, limit, 200*time.Millisecond, func() error {
		for _, name := range streams {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			s, err := js.Stream(sctx, name)
			cancel()
			if err != nil {
				return fmt.Errorf("not every stream led by a live server: %s: %w", name, err)
			}
			if c := s.CachedInfo().Cluster; c == nil || c.Leader == "" || c.Leader == gone {
				return fmt.Errorf("not every stream led by a live server: %s: leader %+v", name, c)
			}
		}
		return nil
	})
}

// Role turns assigned to a host's agents and never typed are not lost with
// the host: h3's herdr goes away first, so its gateway types nothing while
// the routers still take its idle agents for ready, and role turns land on
// them and stay untyped; then h3's fleetd up is killed (-9). Once it is stale the surviving routers release those
// turns to the role, h1's and h2's agents answer them, and no turn is
// typed twice — without h3 ever coming back.
func TestClusterRoleTurnsAssignedToAKilledHostAreTakenByTheOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet")
	}
	phase := phases(t)
	f := startFleet(t, 3, clusterRoles(t, 300*time.Millisecond, map[string]int{"w": 0}), "--no-sync-always")
	agents, hostOf := f.spawnEach(2, "w")
	h1, h2, h3 := f.hosts[0], f.hosts[1], f.hosts[2]
	watch := watchTurns(t, h2.natsURL)
	phase("agents idle")

	if err := h3.herdr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h3.herdr.cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var roleTurns []string
	log, _ := connectLog(t, h1.natsURL)
	queueRole := func(text string) string {
		id := ulid.Make().String()
		ev := events.Event{ID: id, CorrelationID: id, Subject: "w", Data: events.RoleQueued{From: "test", Text: text}}
		// The same id again is a no-op: retry while the cluster elects a
		// new leader for what h3 led.
		for {
			actx, acancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := log.Append(actx, ev)
			acancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("append role turn %q: %v", text, err)
			}
		}
		roleTurns = append(roleTurns, id)
		return id
	}
	// One at a time until both of h3's agents hold one: silent, they look
	// ready and idle longest, so the routers pick them before any agent
	// that answered since.
	onH3 := func() (queued []string) {
		for _, id := range roleTurns {
			if tr := watch.turn(id); tr.State == lifecycle.StateQueued && hostOf[tr.Agent] == "h3" {
				queued = append(queued, id)
			}
		}
		return queued
	}
	for i := 0; len(onH3()) < 2; i++ {
		if i == 8 {
			t.Fatalf("8 role turns and h3's agents do not hold two of them: %v", onH3())
		}
		id := queueRole(fmt.Sprintf("before the kill %d", i))
		watch.waitAssigned(t, 10*time.Second, "role turn assigned", []string{id}, time.Now())
	}
	stranded := onH3()
	if err := h3.up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h3.up.cmd.Wait()
	killedAt := time.Now()
	phase(fmt.Sprintf("killed h3 with role turns %v assigned to its agents, never typed", stranded))
	for i := range 8 {
		queueRole(fmt.Sprintf("after the kill %d", i))
	}

	watch.waitFinal(t, 2*time.Minute, "every role turn is answered without h3", roleTurns, len(roleTurns), func() string { return diagnose(t, f, agents) })
	var took time.Duration
	for _, id := range stranded {
		tr := watch.turn(id)
		if tr.State != lifecycle.StateReplied || tr.Releases != 1 || tr.ReleasedFrom == "" || hostOf[tr.Agent] == "h3" {
			t.Errorf("stranded turn %s: %s on %s after %d releases (from %s), want replied by h1 or h2 after one", id, tr.State, tr.Agent, tr.Releases, tr.ReleasedFrom)
		}
		took = max(took, tr.AssignedAt.Sub(killedAt))
	}
	phase(fmt.Sprintf("all %d role turns replied; the stranded ones were assigned again %v after the kill (host TTL 15s)", len(roleTurns), took.Round(time.Millisecond)))
	evs := readLog(t, h2.natsURL)
	typedBy := checkOwnership(t, evs)
	for _, id := range roleTurns {
		if typedBy[id] == "" || typedBy[id] == "h3" {
			t.Errorf("role turn %s typed by %q", id, typedBy[id])
		}
	}
	released := 0
	for _, ev := range evs {
		if d, ok := ev.Data.(events.AgentReleased); ok {
			released++
			t.Logf("released %s from %s by %s: %s: %s", ev.CorrelationID, ev.Subject, ev.Source, d.Reason, d.Message)
		}
	}
	if released != len(stranded) {
		t.Errorf("%d releases in the log, want %d (one per stranded turn)", released, len(stranded))
	}
}

// A host lost for a while, three times over: role w has cap 4 and two
// agents on each of three hosts; in every round 30 role turns are queued,
// and once some are answered one host's fleetd up is killed (-9), the
// others carry on, and it is restarted (it rejoins) before the next round
// kills the next host. Read from the log afterwards: the role's turns
// assigned to agents and not final never number more than the cap, in the
// log's order, across the losses and the rejoins; and role turns keep
// being assigned on the live hosts — whenever a turn waits and the role
// is below its cap, the next assignment to a live host's agent follows
// within 3 s (by the events' own times; no turn typed twice, none lost).
func TestClusterHostLossKeepsRoleDispatchWithin3sAndTheCapExact(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet and loses a host three times")
	}
	const roleCap, perRound = 4, 30
	phase := phases(t)
	f := startFleet(t, 3, clusterRoles(t, time.Second, map[string]int{"w": roleCap}), "--no-sync-always")
	agents, hostOf := f.spawnEach(2, "w")
	phase("fleet up, six agents idle")
	var downs []hostDown
	var all []string
	for round, k := range []int{2, 0, 1} {
		victim, via := f.hosts[k], f.hosts[(k+1)%3]
		watch := watchTurns(t, via.natsURL)
		log, js := connectLog(t, via.natsURL)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var ids []string
		for i := range perRound {
			id := ulid.Make().String()
			ev := events.Event{ID: id, CorrelationID: id, Subject: "w", Data: events.RoleQueued{From: "test", Text: fmt.Sprintf("round %d turn %d", round, i)}}
			// The same id again is a no-op: retry while the cluster elects.
			for {
				actx, acancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := log.Append(actx, ev)
				acancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("round %d: append role turn %d: %v", round, i, err)
				}
			}
			ids = append(ids, id)
		}
		all = append(all, ids...)
		watch.waitFinal(t, 2*time.Minute, fmt.Sprintf("round %d: turns answered before the kill", round), ids, 6, nil)
		leaders := leadersOn(ctx, js, victim.name)
		if err := victim.up.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		victim.up.cmd.Wait()
		d := hostDown{host: victim.name, from: time.Now()}
		phase(fmt.Sprintf("round %d: killed %s, which led %v", round, victim.name, leaders))
		// Every turn not typed on the victim's agents is answered without it.
		err := checkfor.Poll(3*time.Minute, 250*time.Millisecond, func() error {
			var open []string
			for _, id := range ids {
				if tr := watch.turn(id); !tr.State.Final() && (!tr.State.InFlight() || hostOf[tr.Agent] != victim.name) {
					open = append(open, fmt.Sprintf("%s(%s %s)", id, tr.Agent, tr.State))
				}
			}
			if len(open) > 0 {
				return fmt.Errorf("%d open: %v", len(open), open)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: the live hosts do not finish the role turns: %v\n%s", round, err, diagnose(t, f, agents))
		}
		phase(fmt.Sprintf("round %d: the live hosts answered every turn not typed on %s", round, victim.name))
		f.restart(victim)
		d.to = time.Now()
		downs = append(downs, d)
		watch.waitFinal(t, 3*time.Minute, fmt.Sprintf("round %d: every role turn final once %s is back", round, victim.name), ids, len(ids), func() string { return diagnose(t, f, agents) })
		waitRoster(t, via, time.Minute, "all six agents idle again", allIdle(agents...))
		cancel()
		phase(fmt.Sprintf("round %d: %s back, every turn final", round, victim.name))
	}

	evs := readLog(t, f.hosts[0].natsURL)
	checkOwnership(t, evs)
	m := measureRole(evs, "w", roleCap, hostOf, downs)
	if m.replied != len(all) {
		t.Errorf("%d of %d role turns replied", m.replied, len(all))
	}
	t.Logf("role w: at most %d turns assigned and not final at once (%d typed and not final), cap %d; longest wait for an assignment on a live host while a turn waited below the cap: %v (%s)",
		m.peakOpen, m.peakTyped, roleCap, m.gap.Round(time.Millisecond), m.gapAt)
	if m.peakOpen > roleCap || m.peakTyped > roleCap {
		t.Errorf("the cap is %d, but %d turns were assigned and not final at once (%d typed), at #%d", roleCap, m.peakOpen, m.peakTyped, m.peakSeq)
	}
	if m.gap > 3*time.Second {
		t.Errorf("role turns waited %v below the cap for an assignment on a live host (%s), want at most 3s", m.gap.Round(time.Millisecond), m.gapAt)
	}
}

// hostDown is the time a host's fleetd up was dead.
type hostDown struct {
	host     string
	from, to time.Time
}

// leadersOn lists what the server named host leads: the stream, the
// buckets, the router's consumers — what fails over when it dies.
func leadersOn(ctx context.Context, js jetstream.JetStream, host string) []string {
	var out []string
	for name := range js.StreamNames(ctx).Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue
		}
		if c := s.CachedInfo().Cluster; c != nil && c.Leader == host {
			out = append(out, name)
		}
		for ci := range s.ListConsumers(ctx).Info() {
			if ci.Cluster != nil && ci.Cluster.Leader == host && strings.HasPrefix(ci.Name, "router-") {
				out = append(out, name+"/"+ci.Name)
			}
		}
	}
	return out
}

// roleMeasure is what measureRole reads off the log.
type roleMeasure struct {
	peakOpen, peakTyped int    // most turns assigned / typed and not final at once
	peakSeq             uint64 // where peakOpen was first reached
	gap                 time.Duration
	gapAt               string // where the longest gap ended
	replied             int
}

// measureRole folds the log in its order through a lifecycle.Book and
// measures role's dispatch: the most of its turns assigned to agents and
// not final at once (what its cap bounds), and the longest time during
// which a turn of the role waited unassigned, the role was below its cap,
// and no turn was assigned to an agent of a live host (one not in downs).
// Time is the events' own, kept monotonic in log order: an event that
// reaches the log late (a hook's, replayed) does not move it back.
func measureRole(evs []events.Event, role string, limit int, hostOf map[string]string, downs []hostDown) roleMeasure {
	var m roleMeasure
	live := func(agent string, at time.Time) bool {
		for _, d := range downs {
			if d.host == hostOf[agent] && !at.Before(d.from) && at.Before(d.to) {
				return false
			}
		}
		return true
	}
	book := lifecycle.NewBook()
	open, typed, waiting := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var clock, since time.Time
	end := func(why string) {
		if !since.IsZero() && clock.Sub(since) > m.gap {
			m.gap, m.gapAt = clock.Sub(since), fmt.Sprintf("%s, from %s to %s", why, since.Format("15:04:05.000"), clock.Format("15:04:05.000"))
		}
		since = time.Time{}
	}
	for _, ev := range evs {
		if ev.Time.After(clock) {
			clock = ev.Time
		}
		tr, ok := book.Apply(ev)
		if !ok || tr.Role != role {
			continue
		}
		open[tr.ID] = tr.Agent != "" && !tr.State.Final()
		typed[tr.ID] = tr.State.InFlight()
		waiting[tr.ID] = tr.Agent == "" && tr.State == lifecycle.StateQueued
		if tr.State == lifecycle.StateReplied {
			m.replied++
		}
		if q, ok := ev.Data.(events.AgentQueued); ok && q.AssignedFrom == role && live(ev.Subject, clock) {
			end(fmt.Sprintf("assigned %s to %s at #%d", tr.ID, ev.Subject, ev.Seq))
		}
		if n := count(open); n > m.peakOpen {
			m.peakOpen, m.peakSeq = n, ev.Seq
		}
		m.peakTyped = max(m.peakTyped, count(typed))
		stalled := count(waiting) > 0 && count(open) < limit
		switch {
		case stalled && since.IsZero():
			since = clock
		case !stalled:
			end(fmt.Sprintf("at the cap or nothing waiting at #%d", ev.Seq))
		}
	}
	return m
}
