package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

// f5Fleet is a whole fleetd in this process — embedded NATS, the gateway
// with its projections, router, shim, herdr bridge and session reaper —
// over the built-in herdr with real PTY panes, where every agent is
// `fleetd sim-agent` firing the real hooks. Mains act through the marker
// "[orchestrate: ARGS]": they run `fleetd orchestrate ARGS` from their
// pane, the same command the test runs at the top.
type f5Fleet struct {
	t         *testing.T
	dir       string
	dataDir   string
	rolesFile string
	herdr     *herdrtest.Server
	gw        *gateway.Gateway
	env       []string
}

func startF5(t *testing.T, idleTTL time.Duration, runtime string) *f5Fleet {
	t.Helper()
	dir := t.TempDir()
	fx := &f5Fleet{t: t, dir: dir, dataDir: filepath.Join(dir, "data"), rolesFile: filepath.Join(dir, "roles.json")}
	cfg := herdrtest.Config{Validator: herdrschema.Schema(t)}
	if runtime == "agentapi" {
		// The agentapi runtime's panes, as `fleetd agentapi-host`
		// serves them: each agent under its own agentapi server.
		requireAgentapi(t)
		cfg.Start = func(spec herdrtest.StartSpec) (herdrtest.Terminal, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return agentapi.StartTerminal(ctx, agentapi.TerminalConfig{Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows})
		}
	}
	fx.herdr = herdrtest.Start(t, cfg)

	// Roles: mains and workers are simulated Claude Codes that can resume
	// ({resume}); their panes carry what `fleetd orchestrate --spawn` needs
	// besides the FLEET_* variables spawn sets.
	transcripts := filepath.Join(dir, "transcripts")
	paneEnv := map[string]string{"HERDR_AGENT": "claude", "FLEET_ROLES": fx.rolesFile, "FLEET_DATA_DIR": fx.dataDir, "FLEET_LOG_LEVEL": "warn"}
	sim := []string{fleetdBin, "sim-agent", "--think", "200ms", "--transcript-dir", transcripts, roles.ResumePlaceholder}
	rc := roles.Config{Roles: map[string]roles.Role{
		"main": {Tier: 1, EnvClass: roles.EnvClean, Env: paneEnv, Command: sim, Description: "a main"},
		"w":    {Tier: 2, EnvClass: roles.EnvClean, Env: paneEnv, Command: sim, Description: "a worker"},
	}}
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fx.rolesFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if rc, err = roles.Load(fx.rolesFile); err != nil {
		t.Fatal(err)
	}

	fx.gw = startGateway(t, fx.dataDir, gateway.Config{Host: "f5", HerdrPath: fx.herdr.Path(), Roles: &rc, IdleTTL: idleTTL})

	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLEET_") && !strings.HasPrefix(kv, "HERDR_") {
			fx.env = append(fx.env, kv)
		}
	}
	fx.env = append(fx.env, "FLEET_NATS_URL="+fx.gw.NATSURL(), "FLEET_HOST=f5", "FLEET_URL=http://"+fx.gw.HTTPAddr(),
		"FLEET_ROLES="+fx.rolesFile, "FLEET_HERDR_SOCKET="+fx.herdr.Path(), "FLEET_DATA_DIR="+fx.dataDir, "FLEET_LOG_LEVEL=warn")
	return fx
}

// orchestrateProc is a `fleetd orchestrate --spawn` child process.
type orchestrateProc struct {
	cmd            *exec.Cmd
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	done           chan error
}

func (p *orchestrateProc) output() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String()
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedBuffer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

func (fx *f5Fleet) orchestrate(args ...string) *orchestrateProc {
	fx.t.Helper()
	p := &orchestrateProc{done: make(chan error, 1)}
	p.cmd = exec.Command(fleetdBin, append([]string{"orchestrate", "--spawn"}, args...)...)
	p.cmd.Env = fx.env
	p.cmd.Stdout = lockedBuffer{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedBuffer{&p.mu, &p.stderr}
	if err := p.cmd.Start(); err != nil {
		fx.t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	fx.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// wait waits for the process to exit 0 and returns what it printed.
func (p *orchestrateProc) wait(t *testing.T, total time.Duration) string {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		out, errOut := p.output()
		if err != nil {
			t.Fatalf("fleetd orchestrate: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
		return out
	case <-time.After(total):
		out, errOut := p.output()
		t.Fatalf("fleetd orchestrate still running after %s\nstdout:\n%s\nstderr:\n%s", total, out, errOut)
		return ""
	}
}

func (fx *f5Fleet) read(subject string) []events.Event {
	return eventstest.ReadAll(fx.t, fx.gw.Log, events.Query{Subjects: []string{subject}})
}

func (fx *f5Fleet) writeJSON(name, body string) string {
	fx.t.Helper()
	path := filepath.Join(fx.dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		fx.t.Fatal(err)
	}
	return path
}

// taskStates are the job's task events, by task.
func (fx *f5Fleet) taskStates(job string) map[string][]events.JobTask {
	out := map[string][]events.JobTask{}
	for _, ev := range fx.read("fleet.job." + job + ".task") {
		d := ev.Data.(events.JobTask)
		out[d.Task] = append(out[d.Task], d)
	}
	return out
}

func replied(tasks []events.JobTask) bool {
	return slices.ContainsFunc(tasks, func(d events.JobTask) bool { return d.State == events.TaskReplied })
}

// F5: orchestrator → 2 mains → 4 workers, every agent a simulated Claude
// Code in a herdr pane — and again with every agent under agentapi —,
// every tier the same `fleetd orchestrate` command.
// The orchestrator is killed mid-job and resumed without re-sending what
// was done; every prompt is exactly its instructions plus its recorded
// slice; the final rollup carries every worker's result; and a main
// reaped for idleness is resumed by name with its Claude session id.
func TestAThreeLevelRunInHerdrPanesSurvivesKillAndResumesSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("three-level run over real panes (about 30 s)")
	}
	for _, runtime := range []string{"herdr", "agentapi"} {
		t.Run(runtime, func(t *testing.T) { testThreeLevelRun(t, runtime) })
	}
}

func testThreeLevelRun(t *testing.T, runtime string) {
	fx := startF5(t, 2*time.Second, runtime)
	subA := fx.writeJSON("sub-a.json", `{"goal":"part A",
		"context":[{"key":"a1-notes","tags":["a1"],"text":"notes for A1"},{"key":"a2-notes","tags":["a2"],"text":"notes for A2"}],
		"tasks":[{"id":"wa1","to":"session:wa1","instructions":"implement A1 [delay=200ms]","context":{"keys":["a1-notes"]}},
		         {"id":"wa2","to":"session:wa2","instructions":"implement A2 [delay=200ms]","context":{"tags":["a2"]}}]}`)
	// Part B's workers are slow, so the orchestrator can be killed while
	// b is in flight and a is done.
	subB := fx.writeJSON("sub-b.json", `{"goal":"part B",
		"context":[{"key":"b1-notes","tags":["b1"],"text":"notes for B1"},{"key":"b2-notes","tags":["b2"],"text":"notes for B2"}],
		"tasks":[{"id":"wb1","to":"session:wb1","instructions":"implement B1 [delay=4s]","context":{"keys":["b1-notes"]}},
		         {"id":"wb2","to":"session:wb2","instructions":"implement B2 [delay=4s]","context":{"keys":["b2-notes"]}}]}`)
	plan := fx.writeJSON("plan.json", fmt.Sprintf(`{"goal":"F5",
		"context":[{"key":"spec-a","tags":["a"],"text":"alpha spec"},{"key":"spec-b","tags":["b"],"text":"beta spec"},
		           {"key":"shared","tags":["a","b"],"text":"shared conventions"},{"key":"noise","tags":["x"],"text":"for nobody"}],
		"tasks":[{"id":"a","to":"session:main-a","instructions":"build part A [orchestrate: %s --job f5-a --spawn --session-role w]","context":{"tags":["a"]}},
		         {"id":"b","to":"session:main-b","instructions":"build part B [orchestrate: %s --job f5-b --spawn --session-role w]","context":{"tags":["b"]}}]}`, subA, subB))

	start := time.Now()
	first := fx.orchestrate(plan, "--job", "f5")
	checkfor.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		select {
		case err := <-first.done:
			first.done <- err
			_, errOut := first.output()
			return fmt.Errorf("orchestrate ended before the kill: %v\n%s", err, errOut)
		default:
		}
		if st := fx.taskStates("f5"); !replied(st["a"]) {
			return fmt.Errorf("task a not replied yet: %+v", st)
		}
		return nil
	})
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	first.done <- nil
	if st := fx.taskStates("f5"); replied(st["b"]) {
		t.Fatalf("b replied before the kill; the test did not kill mid-job: %+v", st)
	}
	t.Logf("killed the orchestrator %s in, a replied, b in flight", time.Since(start).Round(time.Millisecond))

	second := fx.orchestrate("--resume", "f5")
	rollup := strings.TrimSpace(second.wait(t, 60*time.Second))
	_, progress := second.output()
	t.Logf("resumed run done %s in", time.Since(start).Round(time.Millisecond))

	// Nothing completed was sent again: one turn per task, and b was
	// re-attached to, not re-sent.
	turns := map[string]int{}
	for _, ev := range fx.read("fleet.agent.*.queued") {
		if q := ev.Data.(events.AgentQueued); q.Job == "f5" {
			turns[q.Task]++
		}
	}
	if turns["a"] != 1 || turns["b"] != 1 {
		t.Errorf("turns per task = %v, want one each for a and b", turns)
	}
	if !strings.Contains(progress, "reattached") || strings.Contains(progress, " sent ") {
		t.Errorf("the resumed run should re-attach b and send nothing:\n%s", progress)
	}

	// Every prompt at both levels is its instructions plus exactly the
	// items its sliced event records — as the agent's own hook saw it.
	slicedItems := map[string][]string{}
	for _, job := range []string{"f5", "f5-a", "f5-b"} {
		fx.checkSlices(job, slicedItems)
	}
	for task, want := range map[string][]string{
		"f5/a": {"shared", "spec-a"}, "f5/b": {"shared", "spec-b"},
		"f5-a/wa1": {"a1-notes"}, "f5-a/wa2": {"a2-notes"}, "f5-b/wb1": {"b1-notes"}, "f5-b/wb2": {"b2-notes"},
	} {
		if got := slicedItems[task]; !slices.Equal(got, want) {
			t.Errorf("%s sliced %v, want %v", task, got, want)
		}
	}

	// Three tiers: the mains under the orchestrator, the workers under
	// their main.
	for agent, want := range map[string][2]any{
		"main-a-1": {1, "orchestrator"}, "main-b-1": {1, "orchestrator"},
		"wa1-1": {2, "main-a-1"}, "wa2-1": {2, "main-a-1"}, "wb1-1": {2, "main-b-1"}, "wb2-1": {2, "main-b-1"},
	} {
		if a, ok := fx.gw.Views.Agent(agent); !ok || a.Tier != want[0] || a.Parent != want[1] {
			t.Errorf("%s: tier %d parent %q, want %v", agent, a.Tier, a.Parent, want)
		}
	}

	// The final rollup is the job's result and carries every worker's.
	done := fx.read("fleet.job.f5.done")
	if len(done) == 0 || done[len(done)-1].Data.(events.JobDone).Result != rollup {
		t.Errorf("printed rollup differs from the job's result %+v", done)
	}
	for job, tasks := range map[string][]string{"f5-a": {"wa1", "wa2"}, "f5-b": {"wb1", "wb2"}} {
		store, err := jobs.LoadStore(context.Background(), fx.gw.Log, job)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			it, ok := store.Get(jobs.RollupPrefix + task)
			if !ok || !strings.HasPrefix(it.Text, "SIM: implement ") || !strings.Contains(rollup, it.Text) {
				t.Errorf("final rollup misses worker %s's result %q:\n%s", task, it.Text, rollup)
			}
		}
	}

	// The gateway's reaper closes idle panes at every tier; the sessions
	// stay resumable.
	fx.waitClosed("main-a", "main-b", "wa1", "wa2", "wb1", "wb2")
	mainA, _ := fx.gw.Views.Agent("main-a-1")
	if mainA.SessionID == "" {
		t.Fatal("main-a-1 never reported a Claude session id")
	}

	// Resumed by name: a new pane, the same Claude conversation.
	again := fx.writeJSON("again.json", `{"tasks":[{"id":"again","to":"session:main-a","instructions":"where were we"}]}`)
	if got := strings.TrimSpace(fx.orchestrate(again, "--job", "f5-again").wait(t, 30*time.Second)); got != "SIM: where were we" {
		t.Errorf("resumed session replied %q", got)
	}
	a2, ok := fx.gw.Views.Agent("main-a-2")
	if !ok || a2.SessionID != mainA.SessionID {
		t.Errorf("main-a-2 runs Claude session %q, want main-a-1's %q", a2.SessionID, mainA.SessionID)
	}
	var started []events.AgentSession
	for _, ev := range fx.read("fleet.agent.main-a-2.session") {
		started = append(started, ev.Data.(events.AgentSession))
	}
	if len(started) == 0 || started[0].SessionID != mainA.SessionID || started[0].Source != "resume" {
		t.Errorf("main-a-2's SessionStart = %+v, want a resume of %s", started, mainA.SessionID)
	}
	row := fx.session("main-a")
	if row.Agent != "main-a-2" || row.SessionID != mainA.SessionID {
		t.Errorf("session main-a = %+v, want main-a-2 on %s", row, mainA.SessionID)
	}
	for _, ev := range fx.read("fleet.agent.main-a-2.replied") {
		if d := ev.Data.(events.AgentReplied); d.SessionID != mainA.SessionID {
			t.Errorf("main-a-2 replied in session %q, want %q", d.SessionID, mainA.SessionID)
		}
	}
	t.Logf("three-level run done in %s", time.Since(start).Round(time.Millisecond))
}

// checkSlices checks every task of job: the turn it was sent as carries
// the prompt rebuilt from its plan instructions and the items its sliced
// event names, and the agent's UserPromptSubmit hook reported exactly
// that prompt. It records the items per "job/task".
func (fx *f5Fleet) checkSlices(job string, items map[string][]string) {
	t := fx.t
	t.Helper()
	created := fx.read("fleet.job." + job + ".created")
	if len(created) != 1 {
		t.Fatalf("job %s: %d created events", job, len(created))
	}
	var plan orchestrator.Plan
	if err := json.Unmarshal([]byte(created[0].Data.(events.JobCreated).Plan), &plan); err != nil {
		t.Fatal(err)
	}
	store, err := jobs.LoadStore(context.Background(), fx.gw.Log, job)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]events.JobTask{}
	for task, evs := range fx.taskStates(job) {
		for _, d := range evs {
			if d.State == events.TaskSent {
				sent[task] = d
			}
		}
	}
	for _, ev := range fx.read("fleet.job." + job + ".sliced") {
		sl := ev.Data.(events.JobSliced)
		items[job+"/"+sl.Task] = sl.Items
		var instr string
		for _, task := range plan.Tasks {
			if task.ID == sl.Task {
				instr = task.Instructions
			}
		}
		var slice jobs.Slice
		for _, key := range sl.Items {
			it, ok := store.Get(key)
			if !ok {
				t.Fatalf("job %s: sliced item %s is not in the store", job, key)
			}
			slice.Items = append(slice.Items, it)
		}
		want := jobs.Prompt(instr, slice)
		s := sent[sl.Task]
		queued := fx.read("fleet.agent." + s.Agent + ".queued")
		if !slices.ContainsFunc(queued, func(q events.Event) bool {
			d := q.Data.(events.AgentQueued)
			return q.ID == s.Turn && d.Text == want && d.SliceRef == ev.ID
		}) {
			t.Errorf("job %s task %s: no turn %s on %s with the prompt %q and slice %s", job, sl.Task, s.Turn, s.Agent, want, ev.ID)
		}
		var prompts []string
		for _, sub := range fx.read("fleet.agent." + s.Agent + ".submitted") {
			if d := sub.Data.(events.AgentSubmitted); d.Via == "hook" {
				prompts = append(prompts, d.Prompt)
			}
		}
		if !slices.Contains(prompts, want) {
			t.Errorf("job %s task %s: %s's hook saw prompts %q, want %q", job, sl.Task, s.Agent, prompts, want)
		}
	}
}

func (fx *f5Fleet) session(name string) projections.Session {
	for _, s := range fx.gw.Views.Sessions() {
		if s.Name == name {
			return s
		}
	}
	return projections.Session{}
}

// waitClosed waits until the named sessions' panes are closed by the
// gateway's idle reaper.
func (fx *f5Fleet) waitClosed(names ...string) {
	fx.t.Helper()
	checkfor.Eventually(fx.t, 20*time.Second, 50*time.Millisecond, func() error {
		for _, name := range names {
			s := fx.session(name)
			a, _ := fx.gw.Views.Agent(s.Agent)
			// Under agentapi the pane's shell can show in the foreground
			// a moment before the pane is gone, and the gateway records
			// the session's end (died) first: ended, not closed, and as
			// resumable (resumed by name below).
			if s.State != projections.SessionClosed && s.State != projections.SessionEnded || !a.Exited || s.Resume == "" {
				return fmt.Errorf("session %s is %q on %s (exited %v)", name, s.State, s.Agent, a.Exited)
			}
		}
		return nil
	})
}
