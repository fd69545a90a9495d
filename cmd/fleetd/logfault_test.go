package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

// logTally counts what a gateway logs: lines and bytes, by message.
type logTally struct {
	mu    sync.Mutex
	bytes int
	lines int
	msgs  map[string]int
	all   strings.Builder
}

var logMsgRE = regexp.MustCompile(`msg="([^"]*)"|msg=(\S+)`)

func (w *logTally) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bytes += len(b)
	w.lines += bytes.Count(b, []byte("\n"))
	if m := logMsgRE.FindSubmatch(b); m != nil {
		w.msgs[string(m[1])+string(m[2])]++
	}
	w.all.Write(b)
	return len(b), nil
}

func (w *logTally) snapshot() (lines, bytes int, msgs map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs = map[string]int{}
	for k, v := range w.msgs {
		msgs[k] = v
	}
	return w.lines, w.bytes, msgs
}

func (w *logTally) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// faultFleet is a whole fleetd in this process over the built-in herdr,
// every agent a `fleetd sim-agent` in a real pane firing the real hooks:
// the fabric the log-fault tests break.
type faultFleet struct {
	t     *testing.T
	dir   string
	herdr *herdrtest.Server
	rc    roles.Config
	cfg   gateway.Config
	gw    *gateway.Gateway
	logs  *logTally
	base  string
}

func startFaultFleet(t *testing.T, think time.Duration, mod func(*gateway.Config)) *faultFleet {
	t.Helper()
	dir := t.TempDir()
	fx := &faultFleet{t: t, dir: dir, logs: &logTally{msgs: map[string]int{}}}
	fx.herdr = herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	paneEnv := map[string]string{"HERDR_AGENT": "claude", "FLEET_LOG_LEVEL": "warn"}
	fx.rc = roles.Config{Roles: map[string]roles.Role{
		"w": {Tier: 2, EnvClass: roles.EnvClean, Env: paneEnv, Command: []string{fleetdBin, "sim-agent", "--think", think.String()}},
	}}
	fx.cfg = gateway.Config{
		Host: "g8", HTTP: "127.0.0.1:0", HerdrPath: fx.herdr.Path(), Roles: &fx.rc, Heartbeat: time.Second,
		NATS:   embeddednats.Config{DataDir: filepath.Join(dir, "data"), ServerName: "g8", Listen: "127.0.0.1:0"},
		Logger: slog.New(slog.NewTextHandler(fx.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if mod != nil {
		mod(&fx.cfg)
	}
	fx.start()
	return fx
}

// start runs the gateway (again) on the fleet's data and herdr.
func (fx *faultFleet) start() {
	fx.t.Helper()
	fx.gw = gateway.New(fx.cfg)
	if err := fx.gw.Start(context.Background()); err != nil {
		fx.t.Fatal(err)
	}
	gw := fx.gw
	fx.t.Cleanup(func() { gw.Close() })
	fx.base = "http://" + fx.gw.HTTPAddr()
}

func (fx *faultFleet) spawn(names ...string) {
	fx.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range names {
		if _, err := fx.gw.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w", Name: n, Cwd: fx.dir}); err != nil {
			fx.t.Fatal(err)
		}
	}
	f := &demo.Fabric{Gateway: fx.gw}
	if err := f.WaitReady(ctx, names); err != nil {
		fx.t.Fatal(err)
	}
}

// send posts a turn; it returns the status and the decoded answer.
func (fx *faultFleet) send(body string, v any) int {
	fx.t.Helper()
	return httpJSON(fx.t, http.MethodPost, fx.base+"/message", body, v)
}

// turn reads a turn's envelope.
func (fx *faultFleet) turn(id string) leadshim.Envelope {
	fx.t.Helper()
	var env leadshim.Envelope
	httpJSON(fx.t, http.MethodGet, fx.base+"/message/"+id, "", &env)
	return env
}

// publishes counts every message published on the gateway's server under
// the given subjects: appends and KV writes, whether JetStream took them
// or not.
func (fx *faultFleet) publishes(subjects ...string) (count func() int64) {
	fx.t.Helper()
	nc, err := nats.Connect(fx.gw.NATSURL())
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.t.Cleanup(nc.Close)
	var n atomic.Int64
	for _, s := range subjects {
		if _, err := nc.Subscribe(s, func(*nats.Msg) { n.Add(1) }); err != nil {
			fx.t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		fx.t.Fatal(err)
	}
	return n.Load
}

// G8: a store capped by --max-store fills up (an administrator's other
// stream takes the room) while turns are in flight and queued. /healthz
// says why, sends are refused with the reason, the fabric's retries back
// off (counted: publishes on fleet.> and $KV.>, and log lines, over a
// window), a blocking send whose deadline passes answers with the reason,
// and once space frees every acknowledged turn ends: replied, or failed
// with a reason (the one whose deadline passed: timeout).
func TestAFullStoreStallsNoAcknowledgedTurnSilently(t *testing.T) {
	const maxStore = 8 << 20
	fx := startFaultFleet(t, 2*time.Second, func(c *gateway.Config) {
		c.NATS.MaxStore = maxStore
		c.Retain = "forever" // the test frees the space itself
	})
	fx.spawn("w-0", "w-1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var ids []string
	for i := range 6 {
		var acc leadshim.Accepted
		if got := fx.send(fmt.Sprintf(`{"to":"w-%d","text":"task %d","wait":false,"timeout":"5m"}`, i%2, i), &acc); got != http.StatusAccepted {
			t.Fatalf("send %d: %d", i, got)
		}
		ids = append(ids, acc.ID)
	}
	// A blocking send with a short deadline, queued behind w-0's turns.
	type answer struct {
		status int
		err    leadshim.Error
	}
	short := make(chan answer, 1)
	go func() {
		var a answer
		a.status = fx.send(`{"to":"w-0","text":"short","timeout":"10s"}`, &a.err)
		short <- a
	}()
	checkfor.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		if a, _ := fx.gw.Views.Agent("w-0"); a.QueueDepth+btoi(a.CurrentTurn != "") < 4 {
			return fmt.Errorf("w-0 holds %d queued", a.QueueDepth)
		}
		return nil
	})

	// An administrator's stream takes the rest of the store.
	js := connectJS(t, fx.gw.NATSURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill.>"}}); err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte("f"), 64<<10)
	for i := 0; ; i++ {
		if _, err := js.Publish(ctx, "fill.x", block); err != nil {
			break
		}
		if i > 1000 {
			t.Fatal("the store never filled")
		}
	}
	h := waitHealth(t, fx.base, http.StatusServiceUnavailable, "store_full", 20*time.Second, "store is full")
	t.Logf("healthz while full: %s", h.Error)
	var refused leadshim.Error
	if got := fx.send(`{"to":"w-1","text":"refused","wait":false}`, &refused); got != http.StatusServiceUnavailable || refused.Err.Code != "store_full" {
		t.Errorf("send while full: %d %+v", got, refused)
	}

	// A window of the full store: retries back off.
	count := fx.publishes("fleet.>", "$KV.>")
	lines0, bytes0, _ := fx.logs.snapshot()
	window := 12 * time.Second
	time.Sleep(window) // the measurement window itself, not a synchronisation
	pubs := count()
	lines1, bytes1, msgs := fx.logs.snapshot()
	t.Logf("over %s while full: %d publishes, %d log lines (%d bytes): %v", window, pubs, lines1-lines0, bytes1-bytes0, msgs)
	// Backed off, the fabric publishes ~40–60 times in the window:
	// heartbeats, the views' retries, and the spool replaying, every 10 s,
	// each hook event that spooled (on a loaded machine the sim agents'
	// hooks spool more: 61 was seen beside another full test run). A
	// storm is thousands.
	if pubs > 100 {
		t.Errorf("%d publishes in %s while the store was full: a retry storm", pubs, window)
	}
	if lines1-lines0 > 25 || bytes1-bytes0 > 16<<10 {
		t.Errorf("%d log lines (%d bytes) in %s while the store was full", lines1-lines0, bytes1-bytes0, window)
	}

	// The short send's deadline passed while full: it answers with the
	// reason and the id.
	select {
	case a := <-short:
		if a.status != http.StatusServiceUnavailable || a.err.Err.Code != "store_full" || a.err.Err.ID == "" ||
			!strings.Contains(a.err.Err.Message, "recorded as failed") {
			t.Errorf("the blocking send past its deadline: %d %+v", a.status, a.err)
		}
		ids = append(ids, a.err.Err.ID)
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking send did not answer at its deadline")
	}

	// Space frees: every acknowledged turn ends.
	if err := js.DeleteStream(ctx, "FILL"); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, fx.base, http.StatusOK, "", 30*time.Second)
	checkfor.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
		var open []string
		for _, id := range ids {
			if env := fx.turn(id); env.Status != "replied" && env.Status != "failed" {
				open = append(open, id+":"+env.Status)
			}
		}
		if len(open) > 0 {
			return fmt.Errorf("turns not ended: %v", open)
		}
		return nil
	})
	replied := 0
	for i, id := range ids {
		env := fx.turn(id)
		switch {
		case env.Status == "replied":
			replied++
		case env.Reason == "":
			t.Errorf("turn %d failed without a reason: %+v", i, env)
		}
		t.Logf("turn %d: %s %s %s", i, env.Status, env.Reason, env.Message)
	}
	if last := fx.turn(ids[len(ids)-1]); last.Status != "failed" || last.Reason != events.ReasonTimeout {
		t.Errorf("the turn whose deadline passed while full: %+v, want failed timeout", last)
	}
	if replied < 4 {
		t.Errorf("only %d of %d turns replied once space freed", replied, len(ids)-1)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// G8: the stream is deleted under a working fleet and an administrator
// creates it again. The gateway notices, follows the new stream, writes
// its live agents' registrations into it, and turns go on: a new turn is
// typed and replied. A restarted fleetd still knows the agent and works.
func TestAgentsWorkOnAfterTheStreamIsCreatedAgain(t *testing.T) {
	fx := startFaultFleet(t, 200*time.Millisecond, nil)
	fx.spawn("w-0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var env leadshim.Envelope
	if got := fx.send(`{"to":"w-0","text":"before","timeout":"1m"}`, &env); got != http.StatusOK || env.Status != "replied" {
		t.Fatalf("turn before: %d %+v", got, env)
	}
	if err := fx.gw.JetStream().DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	// The watcher's own word (not only a failed read's): it noticed.
	waitHealth(t, fx.base, http.StatusServiceUnavailable, "stream_lost", 20*time.Second, "since")
	if _, err := events.EnsureStream(ctx, fx.gw.JetStream(), events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, fx.base, http.StatusOK, "", 30*time.Second)
	checkfor.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		if regs := eventstest.ReadAll(t, fx.gw.Log, events.Query{Subjects: []string{"fleet.agent.w-0.registered"}}); len(regs) != 1 {
			return fmt.Errorf("%d registrations of w-0 in the new stream", len(regs))
		}
		return nil
	})
	env = leadshim.Envelope{}
	if got := fx.send(`{"to":"w-0","text":"after","timeout":"1m"}`, &env); got != http.StatusOK || env.Status != "replied" || !strings.Contains(env.Reply, "after") {
		t.Fatalf("turn after the stream came back: %d %+v\n%s", got, env, fx.logs)
	}

	fx.gw.Close()
	fx.start()
	if a, ok := fx.gw.Views.Agent("w-0"); !ok || a.Exited {
		t.Fatalf("after a restart: %+v %v", a, ok)
	}
	env = leadshim.Envelope{}
	if got := fx.send(`{"to":"w-0","text":"after a restart","timeout":"1m"}`, &env); got != http.StatusOK || env.Status != "replied" {
		t.Fatalf("turn after a restart: %d %+v\n%s", got, env, fx.logs)
	}
}

// G8: with a small retention, a sweep trims the old final turns' events,
// keeps the open turn and the live agent whole (GET still answers for a
// trimmed turn, from fleet_turns), and a restarted fleetd's projections
// equal the live ones.
func TestRetentionKeepsWhatIsNeededAndARestartAgrees(t *testing.T) {
	fx := startFaultFleet(t, 100*time.Millisecond, func(c *gateway.Config) { c.Retain = "1KiB" })
	fx.spawn("w-0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var done []string
	for i := range 4 {
		var env leadshim.Envelope
		if got := fx.send(fmt.Sprintf(`{"to":"w-0","text":"old %d","timeout":"1m"}`, i), &env); got != http.StatusOK || env.Status != "replied" {
			t.Fatalf("turn %d: %d %+v", i, got, env)
		}
		done = append(done, env.ID)
	}
	// An agent on a host that is not running: its turn stays open.
	reg, err := fx.gw.Log.Append(ctx, events.Event{Subject: "w-far", Data: events.AgentRegistered{Agent: "w-far", Host: "far", Pane: "p9", Role: "w"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.gw.Views.WaitSeq(ctx, reg.Seq); err != nil {
		t.Fatal(err)
	}
	var acc leadshim.Accepted
	if got := fx.send(`{"to":"w-far","text":"open","wait":false}`, &acc); got != http.StatusAccepted {
		t.Fatalf("open turn: %d", got)
	}
	var last leadshim.Envelope
	if got := fx.send(`{"to":"w-0","text":"recent","timeout":"1m"}`, &last); got != http.StatusOK || last.Status != "replied" {
		t.Fatalf("recent turn: %d %+v", got, last)
	}
	checkfor.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		st, err := fx.gw.Log.State(ctx)
		if err != nil {
			return err
		}
		if h := fx.gw.Views.Horizon(); h.Checkpoint < st.LastSeq {
			return fmt.Errorf("checkpoint %d, log at %d", h.Checkpoint, st.LastSeq)
		}
		return nil
	})

	sw, err := fx.gw.Compactor.Sweep(ctx)
	if err != nil || sw.Removed == 0 {
		t.Fatalf("sweep %+v %v", sw, err)
	}
	t.Logf("sweep: %+v", sw)
	queued := map[string]bool{}
	for _, ev := range eventstest.ReadAll(t, fx.gw.Log, events.Query{Subjects: []string{"fleet.agent.*.queued"}}) {
		queued[ev.ID] = true
	}
	for _, id := range done {
		if queued[id] {
			t.Errorf("old final turn %s is still in the log", id)
		}
	}
	if !queued[acc.ID] || !queued[last.ID] {
		t.Errorf("the open turn (%v) or the one after it (%v) was trimmed", queued[acc.ID], queued[last.ID])
	}
	for _, agent := range []string{"w-0", "w-far"} {
		if regs := eventstest.ReadAll(t, fx.gw.Log, events.Query{Subjects: []string{"fleet.agent." + agent + ".registered"}}); len(regs) != 1 {
			t.Errorf("%s: %d registrations left, want its last", agent, len(regs))
		}
	}
	if env := fx.turn(done[0]); env.Status != "replied" || !strings.Contains(env.Reply, "old 0") {
		t.Errorf("a trimmed turn is no longer answered: %+v", env)
	}
	if a, ok := fx.gw.Views.Agent("w-far"); !ok || a.QueueDepth != 1 {
		t.Errorf("the open turn's agent: %+v %v", a, ok)
	}

	ids := append(append([]string{}, done...), acc.ID, last.ID)
	before := viewsOf(t, fx.gw.Views, ids)
	fx.gw.Close()
	fx.start()
	after := viewsOf(t, fx.gw.Views, ids)
	if before != after {
		t.Errorf("restarted projections differ:\nlive:\n%s\nrestarted:\n%s", before, after)
	}
	// The sim agent still takes turns.
	var env leadshim.Envelope
	if got := fx.send(`{"to":"w-0","text":"after a restart","timeout":"1m"}`, &env); got != http.StatusOK || env.Status != "replied" {
		t.Fatalf("turn after a restart: %d %+v", got, env)
	}
}

// viewsOf renders what a projection holds that does not depend on the
// clock: every agent's identity, session, turn counts and tokens, every
// session, and the named turns.
func viewsOf(t *testing.T, v projections.Views, turns []string) string {
	t.Helper()
	var b strings.Builder
	for _, a := range v.Roster() {
		fmt.Fprintf(&b, "agent %s host=%s pane=%s role=%s session=%s/%s tokens=%+v cost=%v current=%q queue=%d exited=%v\n",
			a.Agent, a.Host, a.Pane, a.Role, a.Session, a.SessionID, a.Tokens, a.CostUSD, a.CurrentTurn, a.QueueDepth, a.Exited)
	}
	for _, s := range v.Sessions() {
		fmt.Fprintf(&b, "session %s agent=%s id=%s state=%s turns=%d tokens=%+v\n", s.Name, s.Agent, s.SessionID, s.State, s.Turns, s.Tokens)
	}
	sort.Strings(turns)
	for _, id := range turns {
		tu, ok, err := v.Turn(context.Background(), id)
		if err != nil || !ok {
			fmt.Fprintf(&b, "turn %s missing (%v)\n", id, err)
			continue
		}
		fmt.Fprintf(&b, "turn %s %s agent=%s reply=%q reason=%s first=%d last=%d\n", id, tu.State, tu.Agent, tu.Reply, tu.Reason, tu.FirstSeq, tu.LastSeq)
	}
	return b.String()
}
