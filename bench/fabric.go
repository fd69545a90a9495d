package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// turnHops is how many log hops are on a turn's critical path outside the
// agent's own span: queued (shim → projections → bridge), typed (bridge →
// stored) and replied (stored → projections → shim).
const turnHops = 3

// methodRead is herdr's screen read, which the gateway makes before it
// types a turn (the composer check).
const methodRead = "pane.read"

// fabricRun is the fabric stage's moving parts.
type fabricRun struct {
	stage
	fab    *demo.Fabric
	lead   *leadProc
	herdr  *herdrapi.Client
	stream jetstream.Stream
	reg    *events.Registry
	// herdrPID and leadPID are herdr's and the lead's processes (herdr's
	// panes, the agents and their hooks, are under it).
	herdrPID, leadPID int
	// markDir holds the floor agents' marks, which marks watches.
	markDir string
	marks   *markWatch
	// hookCPU is the file the fan-out's agents append each hook run's
	// CPU time to (sim-agent --hook-cpu).
	hookCPU string
}

// fabric: whole turns through the real fleetd (herdr panes, hooks, shim),
// with herdr and the lead in processes of their own as deployed (see
// procs.go), each kind's beside its own floor (the same agent without
// fleetd, floor.go), completion latency, fabric overhead beside the raw
// log hop, events per turn, the hook's cost, and a fan-out.
func (s stage) fabric(ctx context.Context) ([]Row, error) {
	exe := s.Fleetd
	kinds, err := ParseKinds(s.Kinds)
	if err != nil {
		return nil, err
	}
	pick := pickKinds(kinds, s.Claude, demo.CLIOnPath)
	work := filepath.Join(s.dir, "work")
	hookCPU := filepath.Join(s.dir, "fan-out-hook-cpu.txt")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	var cfg roles.Config
	rolesFn := func(api *fakeapi.Server) (roles.Config, error) {
		sim := map[string]string{"HERDR_AGENT": "claude"}
		cfg = roles.Config{Roles: map[string]roles.Role{
			// --think 1ns: the simulated model answers at once.
			"w-sim": {EnvClass: roles.EnvClean, Tier: 2, Env: sim,
				Command: []string{exe, "sim-agent", "--think", "1ns", "--model", "claude-sim"}},
			"w-fan": {EnvClass: roles.EnvClean, Tier: 2, Env: sim,
				Command: []string{exe, "sim-agent", "--think", s.Size.Think.String(), "--model", "claude-sim", "--hook-cpu", hookCPU}},
		}}
		if len(pick.run) > 0 {
			// The real CLIs run as the demo runs them (demo.RealRole).
			home := filepath.Join(s.dir, "agent-home")
			if err := demo.WriteRealHome(home, work, pick.run); err != nil {
				return cfg, err
			}
			for _, k := range pick.run {
				cfg.Roles["w-"+k] = demo.RealRole(k, api.URL(), home)
			}
		}
		return cfg, cfg.Validate()
	}
	hp, err := startHerdrProc(ctx, exe, s.Runtime, s.Progress)
	if err != nil {
		return nil, err
	}
	defer hp.close()
	var submit time.Duration
	if len(pick.run) > 0 {
		// As the demo gives real CLIs: a first prompt while several
		// start on a small machine can outlast the default 5 s.
		submit = 30 * time.Second
	}
	fab, err := demo.StartFabric(ctx, demo.FabricConfig{Dir: s.dir, Host: "bench", Version: s.Version, SyncAlways: s.Sync, Logger: s.Logger, Roles: rolesFn,
		HerdrPath: hp.path, SubmitTimeout: submit})
	if err != nil {
		return nil, err
	}
	defer fab.Close()
	st, err := fab.Gateway.JetStream().Stream(ctx, events.Stream)
	if err != nil {
		return nil, err
	}
	lead, err := startLeadProc(exe, "http://"+fab.Gateway.HTTPAddr(), s.Progress)
	if err != nil {
		return nil, err
	}
	defer lead.close()
	markDir := filepath.Join(s.dir, "floor-marks")
	if err := os.MkdirAll(markDir, 0o755); err != nil {
		return nil, err
	}
	marks, err := watchMarks(markDir)
	if err != nil {
		return nil, err
	}
	defer marks.Close()
	r := &fabricRun{stage: s, fab: fab, lead: lead, herdr: herdrapi.New(hp.path), stream: st, reg: events.NewRegistry(),
		herdrPID: hp.cmd.Process.Pid, leadPID: lead.cmd.Process.Pid, markDir: markDir, marks: marks, hookCPU: hookCPU}

	// Each kind's agent driven by fleetd, and its floor: the same
	// agent, launched alike, outside fleetd with do-nothing hooks.
	specs := []demo.AgentSpec{{Role: "w-sim", Name: "w-sim-1", Cwd: work}}
	for _, k := range pick.run {
		specs = append(specs, demo.AgentSpec{Role: "w-" + k, Name: "w-" + k + "-1", Cwd: work})
	}
	if err := r.start(ctx, specs); err != nil {
		return nil, err
	}
	floors := map[string]*floorAgent{}
	for _, sp := range specs {
		role, err := cfg.Get(sp.Role)
		if err != nil {
			return nil, err
		}
		if floors[sp.Name], err = r.launchFloor(ctx, "floor-"+strings.TrimPrefix(sp.Role, "w-"), role, work); err != nil {
			return nil, err
		}
	}
	for _, f := range floors {
		if err := r.waitFloorIdle(ctx, f, 3*time.Minute); err != nil {
			return nil, err
		}
	}
	var rows []Row
	execs, err := r.hookExecs(ctx, exe)
	if err != nil {
		return nil, err
	}
	// The null turns run between the sim turns (nullRunner).
	nr, err := r.startNull(ctx, fab.Gateway.JetStream())
	if err != nil {
		return nil, err
	}
	sim, err := r.turns(ctx, "w-sim-1", floors["w-sim-1"], s.Size.Turns, nr)
	nr.close()
	if err != nil {
		return nil, err
	}
	null := nr.set
	r.closeFloor(ctx, floors["w-sim-1"])
	hop, err := RoundTrip(ctx, fab.Gateway.JetStream(), s.Size.RoundTrips, 0)
	if err != nil {
		return nil, err
	}
	fl, err := r.floors(ctx, fab.Gateway.JetStream(), max(s.Size.RoundTrips/10, 5))
	if err != nil {
		return nil, err
	}
	r.progress("null turn: p50 %s (admit %s, dispatch %s, completion %s)", null.whole.P50(), null.admit.P50(), null.dispatch.P50(), null.completion.P50())
	rows = append(rows, sim.rows("", "sim-agent, think 0", simTarget)...)
	rows = append(rows, r.overheadRows(sim, hop, fl, null)...)
	for _, k := range demo.RealKinds() {
		if why, skip := pick.skip[k]; skip {
			rows = append(rows, skipRows(k, why)...)
			continue
		}
		agent := "w-" + k + "-1"
		n := s.Size.KindTurns
		if k == "claude" {
			n = s.Size.ClaudeTurns
		}
		ts, err := r.turns(ctx, agent, floors[agent], n, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kindLabel(k), err)
		}
		r.closeFloor(ctx, floors[agent])
		rows = append(rows, ts.rows(k, kindLabel(k), realTarget)...)
	}
	fan, err := r.fanOut(ctx, work)
	if err != nil {
		return nil, err
	}
	rows = append(rows, fan...)
	rows = append(rows, execs.rows()...)
	if s.Runtime == RuntimeAgentapi {
		// Every row says so: the same turns, another runtime, and a
		// run of both runtimes (bench --runtime both) keeps both rows.
		for i := range rows {
			rows[i].Name += UnderAgentapi
		}
	}
	return rows, nil
}

// start spawns the agents and waits until they are ready.
func (r *fabricRun) start(ctx context.Context, specs []demo.AgentSpec) error {
	if err := r.fab.Spawn(ctx, specs); err != nil {
		return err
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := r.fab.WaitReady(wctx, names); err != nil {
		return err
	}
	r.progress("%d agent(s) ready in %s", len(names), time.Since(start).Round(time.Millisecond))
	return nil
}

// waitIdle waits until herdr and the roster both show the agent ready
// with nothing in flight, so a measured turn never waits for the last
// one's tail.
func (r *fabricRun) waitIdle(ctx context.Context, agent string) (pane string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// seen is what the last look found, for the error.
	seen := "not in the roster"
	for {
		a, ok := r.fab.Gateway.Views.Agent(agent)
		if ok {
			seen = fmt.Sprintf("the roster: status %s, turn %q, %d queued, attention %q, session ended %v, pane %q", a.Status, a.CurrentTurn, a.QueueDepth, a.NeedsAttention, a.SessionEnded, a.Pane)
		}
		if ok && a.Ready() && a.Pane != "" {
			if a.Kind != roles.KindClaude {
				// herdr names only Claude Code (and HERDR_AGENT
				// wrappers); the other kinds' hooks say when they are idle.
				return a.Pane, nil
			}
			info, err := r.herdr.Agent(ctx, a.Pane)
			if err == nil && info.AgentStatus.Ready() && !info.LaunchPending {
				return a.Pane, nil
			}
			seen += fmt.Sprintf("; herdr: %s, launch pending %v (%v)", info.AgentStatus, info.LaunchPending, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s never became idle (last seen: %s; its last events: %s): %w", agent, seen, r.recent(agent, 12), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// recent describes the agent's last n events in the log (sequence,
// type, source, time and, for a status, the status), for an error.
func (r *fabricRun) recent(agent string, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []events.Event
	for ev, err := range r.fab.Gateway.Log.Read(ctx, events.Query{Subjects: []string{"fleet.agent." + agent + ".>"}}) {
		if err != nil {
			return err.Error()
		}
		if evs = append(evs, ev); len(evs) > n {
			evs = evs[1:]
		}
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%d %s %s %s", ev.Seq, ev.NATSSubject, ev.Source, ev.Time.Format("15:04:05.000000"))
		if st, ok := ev.Data.(events.AgentStatusChanged); ok {
			fmt.Fprintf(&b, " %s/%s", st.Source, st.Status)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// last is the newest stored message on subject (nil when there is none).
func (r *fabricRun) last(ctx context.Context, subject string) (*jetstream.RawStreamMsg, events.Event, error) {
	m, err := r.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, events.Event{}, nil
	}
	if err != nil {
		return nil, events.Event{}, err
	}
	ev, err := r.reg.Decode(m.Subject, m.Data)
	return m, ev, err
}

// agentEvents counts the agent's events in the log.
func (r *fabricRun) agentEvents(ctx context.Context, agent string) (uint64, error) {
	info, err := r.stream.Info(ctx, jetstream.WithSubjectFilter("fleet.agent."+agent+".>"))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// turnSet is what n alternating fleetd and floor turns measured.
type turnSet struct {
	agent string
	// method is how fleetd typed the turns (AgentTyped.Method), which
	// the floor types alike.
	method string
	// whole: POST /message → reply in hand. floor: the kind's floor agent
	// (do-nothing hooks, no fleetd) typed as fleetd typed the turn → its
	// Stop hook ran. pauseFloor (a kind whose Enter waits for the sign):
	// the floor with herdr's agent.prompt, Enter 300 ms after the text.
	whole, floor, pauseFloor Sample
	// completion: replied stored → reply in hand; fabric: whole minus the
	// agent's span (typed stored → replied stored).
	completion, fabric Sample
	// span: typed stored → replied stored, the agent's part of a turn.
	span Sample
	// The fabric's parts before the agent: admit is POST → queued
	// stored (the shim and the log), dispatch queued stored → typed
	// stored (the gateway's fold, readiness and its write-ahead append).
	admit, dispatch Sample
	// screen: the time of the gateway's screen reads (pane.read, dial to
	// answer) in each turn: nearly always one, the composer check before
	// typing, which is part of dispatch.
	screen Sample
	events uint64
	// requests: herdr requests fleetd's gateway made for the turns.
	requests uint64
}

// turns alternates n turns through fleetd with n turns of the same
// kind's floor agent, so both see the same machine; with null, a null
// turn follows each, as long as the fleetd turn's agent span.
func (r *fabricRun) turns(ctx context.Context, agent string, floor *floorAgent, n int, null *nullRunner) (turnSet, error) {
	ts := turnSet{agent: agent}
	subj := "fleet.agent." + agent + "."
	// One turn each, untimed, first: a CLI's first prompt starts its
	// session (Codex, OpenCode) or loads what it loads lazily, seconds
	// that would make the median of a real CLI's few turns.
	if _, err := r.waitIdle(ctx, agent); err != nil {
		return ts, err
	}
	env, _, _, err := r.lead.send(ctx, leadshim.Message{To: agent, Text: "warm-up turn: say hello", Timeout: "2m"})
	if err != nil || env.Status != "replied" {
		return ts, fmt.Errorf("warm-up turn: %v %s %s", err, env.Status, env.Message)
	}
	if _, tev, err := r.last(ctx, subj+"typed"); err == nil {
		if t, ok := tev.Data.(events.AgentTyped); ok {
			ts.method = t.Method
		}
	}
	if _, err := r.floorTurn(ctx, floor, "floor warm-up turn: say hello", ts.method); err != nil {
		return ts, err
	}
	for i := range n {
		// Through fleetd.
		if _, err := r.waitIdle(ctx, agent); err != nil {
			return ts, err
		}
		before, err := r.agentEvents(ctx, agent)
		if err != nil {
			return ts, err
		}
		text := fmt.Sprintf("bench turn %d: say hello", i+1)
		reqs := r.fab.Gateway.HerdrMetrics().Requests()
		reads := r.fab.Gateway.HerdrMetrics().Took(methodRead)
		env, t0, t1, err := r.lead.send(ctx, leadshim.Message{To: agent, Text: text, Timeout: "2m"})
		if err != nil {
			return ts, fmt.Errorf("turn %d: %w", i+1, err)
		}
		if env.Status != "replied" {
			return ts, fmt.Errorf("turn %d ended %s: %s %s", i+1, env.Status, env.Reason, env.Message)
		}
		typed, tev, err := r.last(ctx, subj+"typed")
		if err != nil || typed == nil || tev.CorrelationID != env.ID {
			return ts, fmt.Errorf("turn %d: no typed event for %s (%v)", i+1, env.ID, err)
		}
		if t, ok := tev.Data.(events.AgentTyped); ok {
			ts.method = t.Method
		}
		replied, _, err := r.last(ctx, subj+"replied")
		if err != nil || replied == nil || replied.Sequence < typed.Sequence {
			return ts, fmt.Errorf("turn %d: no replied event after typed (%v)", i+1, err)
		}
		queued, qev, err := r.last(ctx, subj+"queued")
		if err != nil || queued == nil || qev.ID != env.ID {
			return ts, fmt.Errorf("turn %d: no queued event for %s (%v)", i+1, env.ID, err)
		}
		ts.admit = append(ts.admit, queued.Time.Sub(t0))
		ts.dispatch = append(ts.dispatch, typed.Time.Sub(queued.Time))
		ts.whole = append(ts.whole, t1.Sub(t0))
		ts.completion = append(ts.completion, t1.Sub(replied.Time))
		ts.fabric = append(ts.fabric, t1.Sub(t0)-replied.Time.Sub(typed.Time))
		ts.span = append(ts.span, replied.Time.Sub(typed.Time))
		if err := r.settle(ctx, agent); err != nil {
			return ts, err
		}
		ts.requests += r.fab.Gateway.HerdrMetrics().Requests() - reqs
		if read := r.fab.Gateway.HerdrMetrics().Took(methodRead); read.Calls > reads.Calls {
			ts.screen = append(ts.screen, read.Total-reads.Total)
		}
		after, err := r.agentEvents(ctx, agent)
		if err != nil {
			return ts, err
		}
		ts.events += after - before
		span := replied.Time.Sub(typed.Time)
		if null != nil {
			if err := null.turn(ctx, span); err != nil {
				return ts, err
			}
		}

		// The floor: the same kind without fleetd, typed alike; and,
		// where fleetd presses Enter at the sign, with herdr's pause.
		d, err := r.floorTurn(ctx, floor, fmt.Sprintf("floor turn %d: say hello", i+1), ts.method)
		if err != nil {
			return ts, err
		}
		ts.floor = append(ts.floor, d)
		if ts.method == herdrbridge.MethodLanded {
			if d, err = r.floorTurn(ctx, floor, fmt.Sprintf("floor turn %d, Enter after the pause: say hello", i+1), herdrbridge.MethodPrompt); err != nil {
				return ts, err
			}
			ts.pauseFloor = append(ts.pauseFloor, d)
		}
		if null != nil {
			if err := null.turn(ctx, span); err != nil {
				return ts, err
			}
		}
	}
	r.progress("%s: whole turn p50 %s, floor (do-nothing hooks) p50 %s, agent span p50 %s, completion p99 %s, fabric p50 %s (admit %s, dispatch %s of which herdr's screen read %s, completion %s); typed by %s", agent, ts.whole.P50(),
		ts.floor.P50(), ts.span.P50(), ts.completion.P99(), ts.fabric.P50(), ts.admit.P50(), ts.dispatch.P50(), ts.screen.P50(), ts.completion.P50(), ts.method)
	return ts, nil
}

// settle waits for the turn's trailing events (the idle status from herdr
// and the hook) so they are counted with it.
func (r *fabricRun) settle(ctx context.Context, agent string) error {
	_, err := r.waitIdle(ctx, agent)
	return err
}

// The whole turn's targets over its kind's floor (H3): a simulated
// agent's turn within 5 ms of it, a real CLI's within 15 ms.
const (
	simTarget  = 5 * time.Millisecond
	realTarget = 15 * time.Millisecond
)

// methodWords say how a turn was typed, for a row's note.
func methodWords(method string) string {
	switch method {
	case herdrbridge.MethodLanded:
		return "pasted, Enter as soon as the composer shows the text (the sign)"
	case herdrbridge.MethodPrompt:
		return "herdr's agent.prompt (Enter 300 ms after the text)"
	case herdrbridge.MethodSendInput:
		return "pasted, Enter after the fixed 300 ms pause (no sign is read for this kind)"
	}
	return method
}

// rows renders a turn set: the whole turn against its kind's floor,
// within target.
func (ts turnSet) rows(kind, label string, target time.Duration) []Row {
	n := len(ts.whole)
	tgt := Ms(target)
	whole := Row{Name: "whole turn: " + label, N: n, Unit: UnitMs, P50: Ms(ts.whole.P50()), P99: Ms(ts.whole.P99()),
		Base: Ms(ts.floor.P50()), BaseName: "agent floor", Target: fmt.Sprintf("≤ floor + %gms", tgt),
		Note: fmt.Sprintf("POST /message → reply in the lead's hand, typed by fleetd: %s; over the floor (the same agent without fleetd, next row): fleetd's hooks (two a turn, each waited for by the agent: their execs, hook rows, and what they wait for, e.g. a Stop hook's wait for the reply in the transcript), the gateway, the log and the shim", methodWords(ts.method))}
	whole.Check(whole.Delta() <= tgt)
	floor := Row{Name: "agent floor, do-nothing hooks: " + label, N: len(ts.floor), Unit: UnitMs, P50: Ms(ts.floor.P50()),
		P99: Ms(ts.floor.P99()), Status: StatusNone,
		Note: floorNote(kind)}
	rows := []Row{whole, floor}
	if len(ts.pauseFloor) > 0 {
		pause := Row{Name: "agent floor, do-nothing hooks, Enter after herdr's pause: " + label, N: len(ts.pauseFloor), Unit: UnitMs,
			P50: Ms(ts.pauseFloor.P50()), P99: Ms(ts.pauseFloor.P99()), Base: Ms(ts.floor.P50()), BaseName: "agent floor", Status: StatusNone,
			Note: "the floor with herdr's agent.prompt (Enter 300 ms after the text) instead of Enter at the sign: what pressing Enter at the sign saves"}
		pause.Delta()
		rows = append(rows, pause)
	}
	ev := Row{Name: "events per turn: " + label, N: n, Unit: UnitCount, P50: float64(ts.events) / float64(max(n, 1)),
		Status: StatusNone, Note: "the agent's events in the log per turn, statuses from herdr and hooks included"}
	req := Row{Name: "herdr requests per turn: " + label, N: n, Unit: UnitCount, P50: float64(ts.requests) / float64(max(n, 1)),
		Target: "≤ 10", Note: "requests fleetd's gateway sent its herdr from POST /message to the agent idle again (readiness, typing, proof)"}
	req.Check(req.P50 <= 10)
	screen := Row{Name: "herdr screen reads per turn, time: " + label, N: len(ts.screen), Unit: UnitMs, P50: Ms(ts.screen.P50()),
		P99: Ms(ts.screen.P99()), Status: StatusNone,
		Note: "the gateway's pane.read calls in a turn, dial to answer (fleetd_herdr_request_duration_seconds on /metrics): nearly always one, the composer check before typing, part of the fabric's dispatch"}
	return append(rows, ev, req, screen)
}

// hopFloors are a turn's hops with no work behind them, each after a
// pause: an HTTP request from the lead process to the gateway's, a herdr
// call from the gateway's to herdr's and a log hop. A turn makes one
// request and one herdr call on its way in (the POST, the screen read
// before typing) and three log hops; together they bound the fabric's
// overhead from below on this machine.
type hopFloors struct {
	http, herdr, log Sample
}

// floorGap is the pause before each floor hop.
const floorGap = 10 * time.Millisecond

// floors times n of each hop, one at a time and floorGap apart, as a
// turn's come after a pause (a process that waits is woken by each).
func (r *fabricRun) floors(ctx context.Context, js jetstream.JetStream, n int) (hopFloors, error) {
	var f hopFloors
	var err error
	if f.log, err = RoundTrip(ctx, js, n, floorGap); err != nil {
		return f, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return f, fmt.Errorf("floors: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	for range n {
		t0, t1, err := r.lead.get(ctx, url)
		if err != nil {
			return f, fmt.Errorf("floors: HTTP: %w", err)
		}
		f.http = append(f.http, t1.Sub(t0))
		sleep(ctx, floorGap)
	}
	for range n {
		t0 := time.Now()
		if _, err := r.herdr.Ping(ctx); err != nil {
			return f, fmt.Errorf("floors: herdr ping: %w", err)
		}
		f.herdr = append(f.herdr, time.Since(t0))
		sleep(ctx, floorGap)
	}
	return f, ctx.Err()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// overheadRows are completion latency, fabric overhead and the hops it
// is made of, timed with no work behind them.
func (r *fabricRun) overheadRows(ts turnSet, hop Sample, fl hopFloors, ns nullSet) []Row {
	null := ns.whole
	n := len(ts.whole)
	comp := Row{Name: "completion: Stop hook → caller has reply", N: n, Unit: UnitMs, P50: Ms(ts.completion.P50()),
		P99: Ms(ts.completion.P99()), Target: "≤ 5ms p99",
		Note: "from the replied event's stream timestamp (stored) to the HTTP response read by the caller, a lead process of its own"}
	comp.Check(comp.P99 <= 5)
	floor := Ms(hop.P50()) * turnHops
	fab := Row{Name: "fabric overhead per turn (think 0)", N: n, Unit: UnitMs, P50: Ms(ts.fabric.P50()),
		P99: Ms(ts.fabric.P99()), Base: floor, BaseName: fmt.Sprintf("raw: %d hops", turnHops), Target: "≤ 1ms p50, ≤ 5ms p99",
		Note: fmt.Sprintf("POST → reply minus the agent's span (typed stored → replied stored: herdr's keystrokes, the agent, its hooks); p50 parts: admit (POST → queued stored) %s, dispatch (queued → typed stored) %s, of which herdr's screen read %s, completion %s; the same hops with no work behind them, each after a pause (3 log hops, an HTTP request, a herdr call), take %s",
			fmtMs(ts.admit.P50()), fmtMs(ts.dispatch.P50()), fmtMs(ts.screen.P50()), fmtMs(ts.completion.P50()),
			fmtMs(time.Duration(turnHops)*fl.log.P50()+fl.http.P50()+fl.herdr.P50()))}
	fab.Check(fab.P50 <= 1 && fab.P99 <= 5)
	fab.Ratio()
	// The same overhead against a turn's hops with nothing behind them,
	// chained and timed as a turn's (the null turn): what is left is
	// fleetd's own.
	excess := Row{Name: "fabric overhead over its hops (think 0)", N: n, Unit: UnitMs, P50: Ms(ts.fabric.P50()),
		Base: Ms(null.P50()), BaseName: "null turn", Target: "≤ null turn + 0.5ms",
		Note: "the row above's overhead against the null turn's (next row): the same hops with no work behind them, chained and timed alike; over them, fleetd's own work on the turn's path"}
	over := excess.Delta()
	excess.Versus = fmt.Sprintf("%+.2fms", over)
	excess.Check(over <= 0.5)
	nullRow := Row{Name: "null turn: a turn's hops, no work behind them", N: len(null), Unit: UnitMs, P50: Ms(null.P50()), P99: Ms(null.P99()),
		Status: StatusNone,
		Note: fmt.Sprintf("the lead POSTs to a handler in the gateway's process that appends a stand-in queued event; a consumer has it, calls herdr (ping) and appends a typed one; a sim turn's agent span (p50 %s) later a replied one is appended, and a second consumer has it and wakes the handler, which answers; two after each sim turn (one after it, one after its floor), each with that turn's span and after a pause as long; timed as the fabric overhead: the whole minus typed stored → replied stored; p50 parts as the fabric's: admit %s, dispatch %s, completion %s. The same hops one by one, each after a 10 ms pause (rows below), sum to %s",
			ts.span.P50().Round(time.Millisecond), fmtMs(ns.admit.P50()), fmtMs(ns.dispatch.P50()), fmtMs(ns.completion.P50()), fmtMs(time.Duration(turnHops)*fl.log.P50()+fl.http.P50()+fl.herdr.P50()))}
	rt := Row{Name: "log hop: raw JetStream publish → consume", N: len(hop), Unit: UnitMs, P50: Ms(hop.P50()),
		P99: Ms(hop.P99()), Status: StatusNone, Note: "in-process, on the gateway's server: publish with ack → an ordered consumer has it"}
	httpHop := Row{Name: "process hop: HTTP request, lead → another process", N: len(fl.http), Unit: UnitMs, P50: Ms(fl.http.P50()),
		P99: Ms(fl.http.P99()), Status: StatusNone,
		Note: "the lead process GETs a handler that does nothing, in the gateway's process, 10 ms apart: the floor of a POST /message's way in and back (on loopback TCP)"}
	logHop := Row{Name: "process hop: log hop after a pause", N: len(fl.log), Unit: UnitMs, P50: Ms(fl.log.P50()),
		P99: Ms(fl.log.P99()), Status: StatusNone,
		Note: "the log hop above, 10 ms apart rather than back to back: each wakes the goroutines on its way, as a turn's hops do"}
	herdrHop := Row{Name: "process hop: herdr call (ping)", N: len(fl.herdr), Unit: UnitMs, P50: Ms(fl.herdr.P50()),
		P99: Ms(fl.herdr.P99()), Status: StatusNone,
		Note: "the gateway's process calls herdr's ping, 10 ms apart: a connection, a request and its answer, the floor of the screen read before typing"}
	return []Row{comp, fab, excess, nullRow, rt, logHop, httpHop, herdrHop}
}

// fanOut sends one turn to each of K agents at once, each working T. Its
// rows are the wall time and the fabric's share of it: how long after the
// POSTs fleetd had typed every turn, and how long after each Stop hook's
// replied event was stored its caller had the reply.
func (r *fabricRun) fanOut(ctx context.Context, work string) ([]Row, error) {
	k, T := r.Size.FanOut, r.Size.Think
	var specs []demo.AgentSpec
	var names []string
	for i := range k {
		name := fmt.Sprintf("w-fan-%d", i+1)
		specs = append(specs, demo.AgentSpec{Role: "w-fan", Name: name, Cwd: work})
		names = append(names, name)
	}
	if err := r.start(ctx, specs); err != nil {
		return nil, err
	}
	for _, a := range names {
		if _, err := r.waitIdle(ctx, a); err != nil {
			return nil, err
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done = map[string]time.Time{}
		errs []error
		// start and end: the first POST made and the last answer read,
		// by the lead's clock.
		start, end time.Time
	)
	// The gateway's CPU with the agents idle, for the same work it does
	// beside a fan-out's turns (herdr's events, the views' flushes).
	idle0 := ProcessCPU()
	sleep(ctx, idleWindow)
	idle := ProcessCPU() - idle0
	reads := r.fab.Gateway.HerdrMetrics().Took(methodRead)
	cpu0 := r.cpuNow()
	hooks0 := hookRuns(r.hookCPU)
	for i, a := range names {
		wg.Go(func() {
			env, t0, t1, err := r.lead.send(ctx, leadshim.Message{To: a, Text: fmt.Sprintf("fan-out task %d", i+1), Timeout: "5m"})
			mu.Lock()
			defer mu.Unlock()
			if start.IsZero() || t0.Before(start) {
				start = t0
			}
			if t1.After(end) {
				end = t1
			}
			done[a] = t1
			switch {
			case err != nil:
				errs = append(errs, err)
			case env.Status != "replied":
				errs = append(errs, fmt.Errorf("%s: turn ended %s", a, env.Status))
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("fan-out: %w", errors.Join(errs...))
	}
	wall := end.Sub(start)
	// A Stop hook may still be exiting when its reply reaches the lead:
	// give the agents a moment to reap the last ones.
	sleep(ctx, 200*time.Millisecond)
	cpu := cpuRows(k, wall, cpu0, r.cpuNow(), idle, hookRuns(r.hookCPU).Sub(hooks0))
	read := r.fab.Gateway.HerdrMetrics().Took(methodRead)
	read.Calls, read.Total = read.Calls-reads.Calls, read.Total-reads.Total
	// Where the time went: when fleetd had typed every turn, and when the
	// agents' replies were stored, from the events' own times.
	var typedAfter, toCaller, stored Sample
	for _, a := range names {
		typed, _, err := r.last(ctx, "fleet.agent."+a+".typed")
		if err != nil || typed == nil {
			return nil, fmt.Errorf("fan-out: no typed event for %s (%v)", a, err)
		}
		replied, _, err := r.last(ctx, "fleet.agent."+a+".replied")
		if err != nil || replied == nil {
			return nil, fmt.Errorf("fan-out: no replied event for %s (%v)", a, err)
		}
		typedAfter = append(typedAfter, typed.Time.Sub(start))
		toCaller = append(toCaller, done[a].Sub(replied.Time))
		stored = append(stored, replied.Time.Sub(start))
	}
	lastTyped, firstReply, lastReply := typedAfter.Pct(1), slices.Min(stored), slices.Max(stored)
	r.progress("fan-out: %d turns in %s (T %s); all typed by %s, replies stored from %s to %s", k, wall.Round(time.Millisecond), T,
		lastTyped.Round(time.Millisecond), firstReply.Round(time.Millisecond), lastReply.Round(time.Millisecond))
	row := Row{Name: fmt.Sprintf("fan-out: %d turns on %d agents, T each", k, k), N: k, Unit: UnitMs,
		P50: Ms(wall), Base: Ms(T), BaseName: "T", Status: StatusNone,
		Note: fmt.Sprintf("wall time, first POST → last reply; fleetd had typed all %d by +%s; replies stored from +%s to +%s. Over T: each agent's own turn (typing the prompt, its two hooks, all sharing the cores); the fabric's share is the next two rows",
			k, lastTyped.Round(time.Millisecond), firstReply.Round(time.Millisecond), lastReply.Round(time.Millisecond))}
	row.Delta()
	typedRow := Row{Name: fmt.Sprintf("fan-out: fabric, %d turns typed after the POSTs", k), N: k, Unit: UnitMs,
		P50: Ms(typedAfter.P50()), P99: Ms(typedAfter.P99()), Target: "all ≤ 50ms",
		Note: fmt.Sprintf("first POST (the lead's clock) → each turn's typed event stored (the gateway's readiness check and write-ahead record; the keystrokes follow); the last at %s; herdr answered %d screen reads in the fan-out, %s each on average, one at a time",
			fmtMs(lastTyped), read.Calls, fmtMs(read.Total/time.Duration(max(read.Calls, 1))))}
	typedRow.Check(Ms(lastTyped) <= 50)
	callerRow := Row{Name: "fan-out: fabric, Stop hook → caller has reply", N: k, Unit: UnitMs,
		P50: Ms(toCaller.P50()), P99: Ms(toCaller.P99()), Target: "all ≤ 5ms",
		Note: fmt.Sprintf("each reply's replied event stored → its POST /message answered, while the other agents work and reply; the slowest %s. The replies were stored in bursts, up to %d of %d within %s, where an even spread would put %.1f: the log's server runs in the gateway's process, so hooks' appends sent while that process waits for a core are stored together, and their callers are answered one after another",
			fmtMs(toCaller.Pct(1)), stored.MostWithin(burstWindow), k, burstWindow, float64(k)*burstWindow.Seconds()/max(lastReply-firstReply, burstWindow).Seconds())}
	callerRow.Check(Ms(toCaller.Pct(1)) <= 5)
	return append([]Row{row, typedRow, callerRow}, cpu...), nil
}

// burstWindow is the window the fan-out's reply row counts the most
// replies stored in: a few milliseconds, where a fan-out's hundred
// replies come over a second or more.
const burstWindow = 5 * time.Millisecond

// cpuSample is the CPU used so far by the fan-out's processes: this one
// (the gateway and its embedded NATS), herdr's tree (herdr, and under it
// the panes: the agents and the hooks they run) and the lead.
type cpuSample struct {
	gateway time.Duration
	herdr   cpuTree
	lead    procCPU
}

func (r *fabricRun) cpuNow() cpuSample {
	lead, _, _ := readProcCPU("/proc", r.leadPID)
	return cpuSample{gateway: ProcessCPU(), herdr: readCPUTree("/proc", r.herdrPID), lead: lead}
}

// idleWindow is how long the fan-out times the gateway's CPU with its
// agents idle, before the turns.
const idleWindow = 2 * time.Second

// cpuRows split the CPU the fan-out's k turns used between fleetd — the
// gateway, and the hooks the agents run (exec'd fleetd, each reaped by
// its agent) — and what is not fleetd: the agents' own processes, herdr
// and the lead, per turn, beside what the cores had in the wall time.
// The gateway's row has a baseline: its CPU in idleWindow with the agents
// idle (idle), scaled to the fan-out's wall time.
// RowOthersCPU is the fan-out's CPU row read (in part) in 10 ms clock
// ticks (/proc's times of the agents and their reaped children): a tiny
// run of fast processes can stay under one tick, and such a row's 0 is a
// measurement (InTicks). The hooks' row is each run's own rusage, summed
// (hookRuns): /proc would count them per agent in those ticks too, and
// an agent's two millisecond-long hooks a turn are under one.
const (
	RowHooksCPU  = "fan-out: CPU per turn, the agents' hooks"
	RowOthersCPU = "fan-out: CPU per turn, not fleetd (agents, herdr, lead)"
)

// InTicks reports a row (by name, a runtime's suffix and all) read in
// clock ticks, whose 0 means under one tick.
func InTicks(name string) bool { return strings.HasPrefix(name, RowOthersCPU) }

// hookCPU is what the fan-out's agents' hook runs have taken so far.
type hookCPU struct {
	runs int
	cpu  time.Duration
}

func (h hookCPU) Sub(o hookCPU) hookCPU { return hookCPU{runs: h.runs - o.runs, cpu: h.cpu - o.cpu} }

// hookRuns sums the hook runs the agents logged to path (sim-agent
// --hook-cpu: "<hook> <microseconds>" a line); no file is none yet.
func hookRuns(path string) hookCPU {
	b, err := os.ReadFile(path)
	if err != nil {
		return hookCPU{}
	}
	var h hookCPU
	for _, line := range strings.Split(string(b), "\n") {
		_, us, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(us, 10, 64)
		if !ok || err != nil {
			continue
		}
		h.runs++
		h.cpu += time.Duration(n) * time.Microsecond
	}
	return h
}

func cpuRows(k int, wall time.Duration, before, after cpuSample, idle time.Duration, runs hookCPU) []Row {
	// The agents' reaped children are their hooks, counted exactly in
	// runs instead.
	herdr, agents, _ := after.herdr.since(before.herdr)
	hooks := runs.cpu
	each := func(d time.Duration) time.Duration { return d / time.Duration(k) }
	gw, lead := each(after.gateway-before.gateway), each(after.lead.self-before.lead.self)
	herdr, agents, hooks = each(herdr), each(agents), each(hooks)
	cores := each(time.Duration(runtime.NumCPU()) * wall)
	idleAsLong := each(time.Duration(float64(idle) * wall.Seconds() / idleWindow.Seconds()))
	note := fmt.Sprintf("CPU per turn over the fan-out (first POST → last reply, %s on %d cores: %s a turn to share): the gateway (with its NATS) %s, the agents' hooks (fleetd-hook, exec'd; fleetd hook where none is beside fleetd) %s, the agents' own processes %s, herdr %s, the lead %s; read from getrusage and /proc (in 10 ms ticks), the hooks from each run's rusage (%d runs)",
		wall.Round(time.Millisecond), runtime.NumCPU(), fmtMs(cores), fmtMs(gw), fmtMs(hooks), fmtMs(agents), fmtMs(herdr), fmtMs(lead), runs.runs)
	gwRow := Row{Name: "fan-out: CPU per turn, the gateway (with its NATS)", N: k, Unit: UnitMs, P50: Ms(gw), Status: StatusNone, Note: note,
		Base: Ms(idleAsLong), BaseName: "idle for as long"}
	gwRow.Delta()
	hookRow := Row{Name: RowHooksCPU, N: k, Unit: UnitMs, P50: Ms(hooks), Target: "≤ 10ms",
		Note: "each turn runs two (UserPromptSubmit, Stop) on its agent's path; the split is in the row above's note"}
	hookRow.Check(hooks <= 10*time.Millisecond)
	if runs.runs < k {
		// Each turn runs two; fewer logged means the agents did not
		// say, and a 0 would read as a hook that costs nothing.
		hookRow.Status, hookRow.Note = StatusSkip, fmt.Sprintf("only %d hook runs logged for %d turns (sim-agent --hook-cpu)", runs.runs, k)
	}
	return []Row{gwRow,
		hookRow,
		{Name: RowOthersCPU, N: k, Unit: UnitMs, P50: Ms(agents + herdr + lead), Status: StatusNone,
			Note: "the simulated agents' own processes, herdr and the lead process"},
	}
}
