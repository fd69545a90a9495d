package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// The whole fabric with the real Claude Code: `fleetd up` (a child
// process) drives two real `claude` workers that `fleetd spawn` started in
// panes of a herdr-protocol server, against the fake Messages API. A lead's
// POST /message to each worker by name and one to role:w-local come back
// through the workers' real Stop hooks; the log, the roster, the turns and
// the stock nats CLI all agree on what happened.
func TestRealClaudeWorkersAnswerThroughTheFabric(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	natsBin := requireTool(t, "nats", "go install github.com/nats-io/natscli/nats@v0.5.0")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	started := time.Now()

	// Claude Code on a loaded 2-core machine was seen taking over 10 s to
	// run its UserPromptSubmit hook: give submission proof time.
	fleet := startClaudeFleet(t, []string{"work-1", "work-2"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, map[string]any{
			"description": "real Claude Code workers against the fake API",
			"cap":         2,
		})}
	}, "--submit-timeout", "30s")
	up := fleet.up
	fleet.spawn(ctx, "w-1", "w-local", "work-1")
	fleet.spawn(ctx, "w-2", "w-local", "work-2")
	roster := fleet.waitReady(ctx, 60*time.Second, "w-1", "w-2")
	sessions := map[string]string{}
	for _, a := range roster {
		sessions[a.Agent] = a.SessionID
	}
	t.Logf("both workers ready after %v", time.Since(started).Round(time.Millisecond))

	// The stock nats CLI taps the replies live, from before the sends.
	tap := startNatsSub(t, ctx, natsBin, up.url, "fleet.agent.*.replied")

	sends := []leadshim.Message{
		{To: "w-1", Text: "alpha: a task for w-1 by name"},
		{To: "w-2", Text: "bravo: a task for w-2 by name,\nover two lines"},
		{To: "role:w-local", Text: "charlie: a task for any w-local worker"},
	}
	replies := make([]sendResult, len(sends))
	var wg sync.WaitGroup
	for i, m := range sends {
		m.Timeout = "2m"
		wg.Go(func() { replies[i] = fleet.send(ctx, m) })
	}
	wg.Wait()
	t.Logf("three replies after %v", time.Since(started).Round(time.Millisecond))

	// The envelopes: the echo, through the real Stop hook, fully filled in.
	withUsage := 0
	for i, m := range sends {
		r := replies[i]
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("POST /message to %s: HTTP %d, %v\n%s", m.To, r.status, r.err, r.body)
		}
		e := r.env
		want := "ECHO: " + m.Text
		if e.Status != string(lifecycle.StateReplied) || e.Reply != want {
			t.Errorf("%s: status %q reply %q, want replied %q", m.To, e.Status, e.Reply, want)
		}
		if m.To == "role:w-local" {
			if e.Agent != "w-1" && e.Agent != "w-2" {
				t.Errorf("role turn went to %q, want a w-local worker", e.Agent)
			}
		} else if e.Agent != m.To {
			t.Errorf("turn to %s answered by %q", m.To, e.Agent)
		}
		if e.ID == "" || e.Role != "w-local" {
			t.Errorf("%s: envelope id %q role %q, want both set", m.To, e.ID, e.Role)
		}
		if e.SessionID == "" || e.SessionID != sessions[e.Agent] {
			t.Errorf("%s: session_id %q, want %s's session %q", m.To, e.SessionID, e.Agent, sessions[e.Agent])
		}
		// Model and tokens come from Claude Code's transcript, which it
		// writes asynchronously: the Stop hook often runs before the
		// reply's line is on disk, and the reply goes at once, usage
		// pending; the hook's finisher appends the usage. Every turn has
		// them once settled.
		if e.UsagePending && (e.Tokens.In != 0 || e.Tokens.Out != 0) {
			t.Errorf("%s: usage pending with tokens %+v", m.To, e.Tokens)
		}
		if s := fleet.settled(ctx, e); s.Tokens.In > 0 && s.Tokens.Out > 0 && s.Model != "" {
			withUsage++
		} else {
			t.Errorf("%s: no usage after the turn settled: tokens %+v model %q", m.To, s.Tokens, s.Model)
		}
		if e.QueuedAt == nil || e.SubmittedAt == nil || e.RepliedAt == nil ||
			e.SubmittedAt.Before(*e.QueuedAt) || e.RepliedAt.Before(*e.SubmittedAt) {
			t.Errorf("%s: times queued %v submitted %v replied %v, want all set and in order", m.To, e.QueuedAt, e.SubmittedAt, e.RepliedAt)
		} else if want := e.RepliedAt.Sub(*e.QueuedAt).Milliseconds(); e.DurationMS <= 0 || e.DurationMS > want+1 {
			t.Errorf("%s: duration_ms %d, want > 0 and about replied-queued = %d", m.To, e.DurationMS, want)
		}
		if e.Reason != "" || e.Message != "" {
			t.Errorf("%s: a replied turn carries reason %q message %q", m.To, e.Reason, e.Message)
		}
	}
	if withUsage == 0 {
		t.Errorf("no turn carried tokens and model read from Claude Code's transcript")
	}
	if t.Failed() {
		t.FailNow()
	}

	log, js := connectLog(t, up.url)
	all := readEvents(t, ctx, log, "fleet.agent.>")
	turnsKV, err := js.KeyValue(ctx, "fleet_turns")
	if err != nil {
		t.Fatal(err)
	}
	promptIDs := map[string]string{} // turn id → Claude's prompt id
	for i, m := range sends {
		e := replies[i].env
		promptIDs[e.ID] = fleet.checkTurnEvents(ctx, all, turnsKV, m.Text, e)
	}

	// The roster: both idle (or done), nothing in flight, tokens counted.
	checkfor.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		var rosterTokens int64
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		for _, name := range []string{"w-1", "w-2"} {
			a, ok := findAgent(roster, name)
			if !ok {
				return fmt.Errorf("%s is not on the roster", name)
			}
			if (a.Status != events.StatusIdle && a.Status != events.StatusDone) || a.CurrentTurn != "" || a.QueueDepth != 0 {
				return fmt.Errorf("%s: status %q turn %q queue %d, want idle/done with nothing in flight", name, a.Status, a.CurrentTurn, a.QueueDepth)
			}
			rosterTokens += a.Tokens.In + a.Tokens.Out
		}
		if rosterTokens <= 0 {
			return fmt.Errorf("the roster counts no tokens for the workers")
		}
		return nil
	})

	// The nats CLI saw every reply as it was appended.
	checkfor.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		out := tap.Output()
		// The printed events, by reply text. A hook's correlation id is
		// best effort, so the turn is told by the reply's prompt id.
		seen := map[string]string{}
		for line := range strings.Lines(out) {
			var ev struct {
				Type    string `json:"type"`
				Subject string `json:"subject"`
				Data    struct {
					Reply    string `json:"reply"`
					PromptID string `json:"prompt_id"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "fleet.agent.replied" {
				seen[ev.Data.Reply] = ev.Subject + "/" + ev.Data.PromptID
			}
		}
		for i, m := range sends {
			e := replies[i].env
			if want := e.Agent + "/" + promptIDs[e.ID]; seen["ECHO: "+m.Text] != want {
				return fmt.Errorf("nats sub has not shown the reply to %s (turn %s, %s):\n%s", m.To, e.ID, want, out)
			}
		}
		return nil
	})
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}

// checkTurnEvents checks one finished turn against the log, the turn
// projection, the fake's requests and Claude Code's transcript: typed
// exactly once, submitted with the real prompt_id, replied with the same
// prompt_id, and the model saw the prompt exactly once. It returns the
// turn's prompt id.
func (f *claudeFleet) checkTurnEvents(ctx context.Context, all []events.Event, turnsKV jetstream.KeyValue, text string, e leadshim.Envelope) (promptID string) {
	t := f.t
	t.Helper()
	// Typed events are the gateway's own, correlated with the turn id.
	var typed, enters int
	for _, ev := range all {
		if lifecycle.TurnID(ev) != e.ID {
			continue
		}
		if _, ok := ev.Data.(events.AgentQueued); ok && ev.Subject != e.Agent {
			t.Errorf("turn %s: queued on %s too, answered by %s", e.ID, ev.Subject, e.Agent)
		}
		if d, ok := ev.Data.(events.AgentTyped); ok {
			if ev.Subject != e.Agent {
				t.Errorf("turn %s: typed into %s, answered by %s", e.ID, ev.Subject, e.Agent)
			} else if d.Method == herdrbridge.MethodEnter {
				enters++
			} else {
				typed++
			}
		}
	}
	if typed != 1 {
		t.Errorf("turn %s (%q): typed %d times, want exactly 1", e.ID, text, typed)
	}
	if enters > 0 {
		t.Logf("turn %s: %d extra Enter (no submission seen in time)", e.ID, enters)
	}

	// The hooks' events: their correlation id is best effort (the roster's
	// current_turn), so find them as the Book joins them: the
	// UserPromptSubmit by its prompt, the Stop by that prompt's id.
	var submitted []events.Event
	for _, ev := range all {
		if d, ok := ev.Data.(events.AgentSubmitted); ok && ev.Subject == e.Agent && d.Via == "hook" && d.Prompt == text {
			submitted = append(submitted, ev)
		}
	}
	if len(submitted) != 1 {
		t.Fatalf("turn %s: %d UserPromptSubmit events for its prompt, want 1: %+v", e.ID, len(submitted), submitted)
	}
	sub := submitted[0].Data.(events.AgentSubmitted)
	if sub.PromptID == "" || sub.SessionID != e.SessionID {
		t.Errorf("turn %s: submitted %+v, want a prompt_id and session %q", e.ID, sub, e.SessionID)
	}
	if c := submitted[0].CorrelationID; c != e.ID {
		t.Logf("turn %s: its UserPromptSubmit was correlated with %q", e.ID, c)
	}
	var replied []events.AgentReplied
	for _, ev := range all {
		if d, ok := ev.Data.(events.AgentReplied); ok && ev.Subject == e.Agent && d.PromptID == sub.PromptID {
			replied = append(replied, d)
		}
	}
	if len(replied) != 1 {
		t.Fatalf("turn %s: %d replied events with prompt_id %s, want 1", e.ID, len(replied), sub.PromptID)
	}
	rep := replied[0]
	switch {
	case rep.Reply != e.Reply || rep.SessionID != e.SessionID || rep.Tokens.In != e.Tokens.In || rep.Tokens.Out != e.Tokens.Out || rep.UsagePending != e.UsagePending:
		t.Errorf("turn %s: replied event %+v, want the envelope's reply, session, tokens and usage pending", e.ID, rep)
	case !rep.UsagePending && rep.Model != e.Model:
		// A reply usage pending has no model: the envelope has the
		// roster's.
		t.Errorf("turn %s: replied event's model %q, envelope's %q", e.ID, rep.Model, e.Model)
	case rep.UsagePending:
		// Its usage event, for its prompt, once.
		var usage int
		for _, ev := range all {
			if d, ok := ev.Data.(events.AgentUsage); ok && ev.Subject == e.Agent && d.PromptID == sub.PromptID {
				usage++
			}
		}
		if usage > 1 {
			t.Errorf("turn %s: %d usage events for prompt %s, want at most one", e.ID, usage, sub.PromptID)
		}
	}

	// The turn projection (KV fleet_turns, written behind the fold).
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		entry, err := turnsKV.Get(ctx, e.ID)
		if err != nil {
			return fmt.Errorf("turn %s in fleet_turns: %w", e.ID, err)
		}
		var turn lifecycle.Turn
		if err := json.Unmarshal(entry.Value(), &turn); err != nil {
			return err
		}
		if turn.PromptID != rep.PromptID || turn.State != lifecycle.StateReplied || turn.Text != text {
			return fmt.Errorf("turn %s projected as %+v, want replied with prompt_id %q", e.ID, turn, rep.PromptID)
		}
		return nil
	})

	// The model saw the prompt exactly once (nothing was typed twice), from
	// the session the turn reports. Requests carry no prompt id; the
	// transcript below does.
	var seen int
	for _, r := range f.api.Requests() {
		if r.Prompt == text && r.Rule == "echo" {
			seen++
			if got := r.Header.Get("X-Claude-Code-Session-Id"); got != e.SessionID {
				t.Errorf("turn %s: the API request came from session %q, the turn says %q", e.ID, got, e.SessionID)
			}
		}
	}
	if seen != 1 {
		t.Errorf("turn %s: the API got the prompt %q %d times, want 1", e.ID, text, seen)
	}

	// Claude Code's own transcript records the same prompt id for the
	// prompt. It writes the transcript asynchronously: on a loaded
	// machine the prompt's line can land after the reply is in, so the
	// line is waited for — and then must carry that id, once.
	if err := checkfor.Poll(10*time.Second, 50*time.Millisecond, func() error {
		ids, err := f.transcriptPromptIDs(e.SessionID, text)
		if err != nil {
			return err
		}
		if !slices.Equal(ids, []string{rep.PromptID}) {
			return fmt.Errorf("transcript promptIds for %q = %v, want [%s]", text, ids, rep.PromptID)
		}
		return nil
	}); err != nil {
		t.Errorf("turn %s (%s): %v", e.ID, e.Agent, err)
	}
	return rep.PromptID
}

// claudeFleet is the running fabric of the real-Claude tests.
type claudeFleet struct {
	t     *testing.T
	up    *upProcess
	herdr *herdrtest.Server // nil under the agentapi runtime
	api   *fakeapi.Server
	// socket is the herdr-protocol socket the panes are on, and runtime
	// the arguments that name it to fleetd's commands.
	socket  string
	runtime []string
	// dir holds everything the fleet writes: Claude's home, the work
	// directories, the roles file and fleetd's data.
	dir, home, rolesFile, dataDir string
}

// startClaudeFleet runs `fleetd up` over a herdr-protocol server whose
// panes run the real Claude Code against the fake API. Claude's home
// trusts the work directories named (made in the fleet's dir); roles
// makes the roles from the fake API's URL and the environment a Claude
// role runs with. Teardown leaves nothing behind: the panes first (claude
// runs its SessionEnd hook when hung up, which needs fleetd up), and every
// process working in the dir gone before the dir is removed.
func startClaudeFleet(t *testing.T, works []string, roles func(baseURL string, env map[string]string) map[string]any, upArgs ...string) *claudeFleet {
	t.Helper()
	// The temp dir first: cleanups run last-in first-out, so it is
	// removed only after the panes' claude processes are gone.
	dir := t.TempDir()
	var trusted []string
	for _, w := range works {
		if err := os.MkdirAll(filepath.Join(dir, w), 0o755); err != nil {
			t.Fatal(err)
		}
		trusted = append(trusted, filepath.Join(dir, w))
	}
	return startClaudeFleetIn(t, dir, trusted, claudePaneEnv(), roles, upArgs...)
}

// startClaudeFleetIn is startClaudeFleet in dir (which the caller removes
// after the test, its cleanup registered before this call's), with
// Claude's home trusting the directories named and paneEnv the base
// environment of herdr's panes (claudePaneEnv, or more).
func startClaudeFleetIn(t *testing.T, dir string, trusted, paneEnv []string, roles func(baseURL string, env map[string]string) map[string]any, upArgs ...string) *claudeFleet {
	t.Helper()
	f := newClaudeFleet(t, dir, trusted, roles)
	f.herdr = herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t), Env: paneEnv, Cols: 120, Rows: 40})
	f.socket, f.runtime = f.herdr.Path(), []string{"--herdr", f.herdr.Path()}
	f.up = startUp(t, f.dataDir, append([]string{"--herdr", f.herdr.Path(), "--roles", f.rolesFile, "--heartbeat", "1s"}, upArgs...)...)
	t.Cleanup(func() {
		f.herdr.Close()
		waitGone(t, dir, 20*time.Second)
	})
	t.Cleanup(f.dumpOnFailure)
	return f
}

// newClaudeFleet is what every real-Claude fleet shares, before its
// runtime and fleetd up: the fake API, Claude's home trusting the
// directories named, and the roles file made from the API's URL and the
// environment a Claude role runs with.
func newClaudeFleet(t *testing.T, dir string, trusted []string, roles func(baseURL string, env map[string]string) map[string]any) *claudeFleet {
	t.Helper()
	f := &claudeFleet{t: t, dir: dir, home: filepath.Join(dir, "home"), rolesFile: filepath.Join(dir, "roles.json"), dataDir: filepath.Join(dir, "data")}
	f.api = fakeapi.Start(t)
	if err := fakeapi.WriteClaudeHome(f.home, trusted...); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ANTHROPIC_AUTH_TOKEN": "test", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "HOME": f.home,
	}
	writeJSONFile(t, f.rolesFile, map[string]any{"roles": roles(f.api.URL(), env)})
	return f
}

// claudeRole is a role of real Claude Code agents (claudeBin, with the
// hooks' settings) against the fake API at baseURL, through the gateway
// env class with env (what startClaudeFleet's roles are given), and the
// settings in more besides.
func claudeRole(claudeBin, baseURL string, env map[string]string, more map[string]any) map[string]any {
	role := map[string]any{
		"command":   []string{claudeBin, "--settings", "{settings}"},
		"env_class": "gateway",
		"base_url":  baseURL,
		"env":       env,
	}
	maps.Copy(role, more)
	return role
}

// work is the path of the work directory named in startClaudeFleet.
func (f *claudeFleet) work(name string) string { return filepath.Join(f.dir, name) }

// spawn starts agent name of role in a pane working in work, as `fleetd
// spawn` does.
func (f *claudeFleet) spawn(ctx context.Context, name, role, work string) {
	f.t.Helper()
	out, err := f.cli(ctx, append([]string{"spawn", "--role", role, "--name", name, "--cwd", f.work(work),
		"--roles", f.rolesFile, "--data-dir", f.dataDir}, f.runtime...)...)
	if err != nil {
		f.t.Fatalf("fleetd spawn %s: %v\n%s", name, err, out)
	}
}

// cli runs a fleetd client command against the fleet and returns its
// combined output.
func (f *claudeFleet) cli(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, fleetdBin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+f.t.TempDir(),
		"FLEET_NATS_URL="+f.up.url, "FLEET_URL="+f.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitReady waits up to limit until every named agent is ready — its
// SessionStart hook ran (a session id) and it is idle — and returns the
// roster that showed it.
func (f *claudeFleet) waitReady(ctx context.Context, limit time.Duration, names ...string) []projections.Agent {
	f.t.Helper()
	var roster []projections.Agent
	checkfor.Eventually(f.t, limit, 100*time.Millisecond, func() error {
		var err error
		if roster, err = f.roster(ctx); err != nil {
			return err
		}
		for _, name := range names {
			if a, ok := findAgent(roster, name); !ok || a.SessionID == "" || !a.Ready() {
				return fmt.Errorf("%s not ready yet: %+v", name, a)
			}
		}
		return nil
	})
	return roster
}

func (f *claudeFleet) roster(ctx context.Context) ([]projections.Agent, error) {
	var roster []projections.Agent
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.up.http+"/roster", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /roster: HTTP %d: %s", resp.StatusCode, b)
	}
	return roster, json.NewDecoder(resp.Body).Decode(&roster)
}

// sendResult is one blocking POST /message and its answer.
type sendResult struct {
	status int
	body   []byte
	env    leadshim.Envelope
	err    error
}

func (f *claudeFleet) send(ctx context.Context, m leadshim.Message) sendResult {
	b, err := json.Marshal(m)
	if err != nil {
		return sendResult{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.up.http+"/message", bytes.NewReader(b))
	if err != nil {
		return sendResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sendResult{err: err}
	}
	defer resp.Body.Close()
	r := sendResult{status: resp.StatusCode}
	if r.body, r.err = io.ReadAll(resp.Body); r.err == nil && r.status == http.StatusOK {
		r.err = json.Unmarshal(r.body, &r.env)
	}
	return r
}

// settled is a replied turn's envelope once its usage is in: at once
// when the reply carried it, else as GET /message/{id} has it after the
// usage event the hook's finisher appends (within 10 s).
func (f *claudeFleet) settled(ctx context.Context, e leadshim.Envelope) leadshim.Envelope {
	f.t.Helper()
	if !e.UsagePending {
		return e
	}
	checkfor.Eventually(f.t, 10*time.Second, 50*time.Millisecond, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.up.http+"/message/"+e.ID, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var got leadshim.Envelope
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err
		}
		if got.UsagePending {
			return fmt.Errorf("turn %s: usage still pending", e.ID)
		}
		e = got
		return nil
	})
	return e
}

// transcriptPromptIDs returns the promptId of every user line of the
// session's transcript whose content is text.
func (f *claudeFleet) transcriptPromptIDs(session, text string) ([]string, error) {
	paths, _ := filepath.Glob(filepath.Join(f.home, ".claude", "projects", "*", session+".jsonl"))
	if len(paths) != 1 {
		return nil, fmt.Errorf("transcript of session %s: found %v", session, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return nil, err
	}
	var ids []string
	for line := range bytes.Lines(b) {
		var l struct {
			Type     string `json:"type"`
			PromptID string `json:"promptId"`
			Message  struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &l) != nil || l.Type != "user" {
			continue
		}
		var s string
		if json.Unmarshal(l.Message.Content, &s) == nil && s == text {
			ids = append(ids, l.PromptID)
			continue
		}
		var blocks []struct{ Type, Text string }
		if json.Unmarshal(l.Message.Content, &blocks) == nil &&
			slices.ContainsFunc(blocks, func(b struct{ Type, Text string }) bool { return b.Type == "text" && b.Text == text }) {
			ids = append(ids, l.PromptID)
		}
	}
	return ids, nil
}

// dumpOnFailure logs what a failed run needs to be diagnosed: fleetd up's
// output, the whole event log, every pane's text and the API requests.
func (f *claudeFleet) dumpOnFailure() {
	t := f.t
	if !t.Failed() {
		return
	}
	t.Logf("---- fleetd up output ----\n%s", f.up.Output())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := f.cli(ctx, "tail", "--since", "all", "--no-follow")
	t.Logf("---- fleetd tail --since all --no-follow (%v) ----\n%s", err, out)
	hc := herdrapi.New(f.socket)
	if c, err := hc.Snapshot(ctx); err == nil {
		for _, p := range c.Panes {
			text := ""
			if f.herdr != nil {
				text = string(f.herdr.Output(p.PaneID))
			} else if r, err := hc.Read(ctx, herdrapi.ReadRequest{PaneID: p.PaneID, Source: herdrapi.SourceRecent, Lines: 200}); err == nil {
				text = r.Text
			}
			t.Logf("---- pane %s ----\n%s", p.PaneID, lifecycle.NormalizeText(text))
		}
	} else {
		t.Logf("herdr snapshot: %v", err)
	}
	paths, _ := filepath.Glob(filepath.Join(f.home, ".claude", "projects", "*", "*.jsonl"))
	for _, p := range paths {
		t.Logf("---- transcript %s ----\n%s", p, transcriptSummary(p))
	}
	for _, r := range f.api.Requests() {
		t.Logf("api: %s %s %s rule=%s status=%d prompt=%q", r.Time.Format("15:04:05.000"), r.Method, r.Path, r.Rule, r.Status, r.Prompt)
	}
}

// transcriptSummary is one line per transcript line: its type, time,
// prompt id and usage, enough to tell when Claude Code wrote what.
func transcriptSummary(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	for line := range bytes.Lines(b) {
		var l struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			PromptID  string          `json:"promptId"`
			Message   json.RawMessage `json:"message"`
		}
		if json.Unmarshal(line, &l) != nil {
			fmt.Fprintf(&out, "(unparsed) %.200s\n", line)
			continue
		}
		var m struct {
			StopReason *string         `json:"stop_reason"`
			Usage      json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(l.Message, &m)
		fmt.Fprintf(&out, "%s %s", l.Timestamp, l.Type)
		if l.PromptID != "" {
			fmt.Fprintf(&out, " prompt=%s", l.PromptID)
		}
		if l.Type == "system" {
			fmt.Fprintf(&out, " %.600s", bytes.TrimSpace(line))
		}
		if l.Type == "assistant" {
			stop := "null"
			if m.StopReason != nil {
				stop = *m.StopReason
			}
			fmt.Fprintf(&out, " stop_reason=%s usage=%s", stop, m.Usage)
		}
		out.WriteString("\n")
	}
	return out.String()
}

// startNatsSub runs `nats sub subject` and returns once it has subscribed.
func startNatsSub(t *testing.T, ctx context.Context, natsBin, url, subject string) *upProcess {
	t.Helper()
	cmd := exec.CommandContext(ctx, natsBin, "--server", url, "sub", subject)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	s := startChild(t, cmd, "Subscribing on")
	waitLaunched(t, s, 20*time.Second)
	return s
}

// claudePaneEnv is the base environment of the herdr panes: this
// process's, without what could steer Claude Code to another account,
// config or provider, or make it think it runs inside herdr or Claude.
func claudePaneEnv() []string {
	env := []string{"TERM=xterm-256color"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "TERM", k == "CLAUDE_CONFIG_DIR", k == "CLAUDECODE", k == "CODEX_THREAD_ID",
			strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_CODE_"),
			strings.HasPrefix(k, "HERDR_"), strings.HasPrefix(k, "FLEET_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitGone waits until no process has its working directory under dir
// (the claude workers and their hooks) and kills, by pid, any still there
// after total.
func waitGone(t *testing.T, dir string, total time.Duration) {
	t.Helper()
	inDir := func() []int {
		var pids []int
		links, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, l := range links {
			cwd, err := os.Readlink(l)
			if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
				continue
			}
			var pid int
			if _, err := fmt.Sscanf(l, "/proc/%d/cwd", &pid); err == nil && pid != os.Getpid() {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	var pids []int
	err := checkfor.Poll(total, 100*time.Millisecond, func() error {
		if pids = inDir(); len(pids) > 0 {
			return fmt.Errorf("processes still in %s: %v", dir, pids)
		}
		return nil
	})
	if err != nil {
		t.Logf("%v; killing them", err)
		for _, pid := range pids {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

func readEvents(t *testing.T, ctx context.Context, log events.Log, subject string) []events.Event {
	t.Helper()
	var out []events.Event
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{subject}}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func findAgent(roster []projections.Agent, id string) (projections.Agent, bool) {
	i := slices.IndexFunc(roster, func(a projections.Agent) bool { return a.Agent == id })
	if i < 0 {
		return projections.Agent{}, false
	}
	return roster[i], true
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
