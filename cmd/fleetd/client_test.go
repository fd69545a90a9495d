package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadkit"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

// shimFor serves a lead shim, with the dashboard, over a test fabric.
func shimFor(t *testing.T, f *fleettest.Fleet) *Globals {
	t.Helper()
	dash, err := dashboard.New(dashboard.Config{Log: f.Log, Fleet: f.Views.(dashboard.Fleet)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := leadshim.New(leadshim.Config{Log: f.Log, Views: f.Views, NC: f.NATS.NC, Dashboard: dash,
		Roles: roles.Config{Roles: map[string]roles.Role{"w-local": {Description: "bulk work", Cap: 3}, "lead": {}}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &Globals{URL: hs.URL}
}

func TestSendPrintsTheReplyAndExitsByOutcome(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w-local")
	f.Register("idle", "w-local") // nobody plays it
	f.RunAgents(10*time.Millisecond, "w1")
	g := shimFor(t, f)
	ctx := fleettest.Ctx(t)

	var out bytes.Buffer
	if err := (&SendCmd{To: "w1", Text: []string{"hello", "there"}, Timeout: 20 * time.Second, From: "lead", out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), fleettest.Reply("hello there")+"\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}

	out.Reset()
	if err := (&SendCmd{To: "w1", Text: []string{"-"}, Timeout: 20 * time.Second, JSON: true, out: &out, in: strings.NewReader("from stdin")}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	var env leadshim.Envelope
	if err := json.Unmarshal(out.Bytes(), &env); err != nil || env.Reply != fleettest.Reply("from stdin") || env.Agent != "w1" {
		t.Errorf("--json printed %s (%v)", out.String(), err)
	}

	out.Reset()
	if err := (&SendCmd{To: "idle", Text: []string{"later"}, Async: true, Timeout: time.Minute, out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	asyncID := strings.TrimSpace(out.String())

	err := (&SendCmd{To: "idle", Text: []string{"slow"}, Timeout: 200 * time.Millisecond, out: &out}).Run(ctx, g)
	if exitCode(err) != exitTimeout || !strings.Contains(err.Error(), "fleetd send --wait ") {
		t.Errorf("timeout: exit %d, %v", exitCode(err), err)
	}
	err = (&SendCmd{To: "nobody", Text: []string{"x"}, Timeout: time.Second, out: &out}).Run(ctx, g)
	if exitCode(err) != exitRefused || !strings.Contains(err.Error(), "unknown_agent") {
		t.Errorf("unknown agent: exit %d, %v", exitCode(err), err)
	}
	err = (&SendCmd{To: "w1", Text: []string{"x"}, out: &out}).Run(ctx, &Globals{URL: "http://127.0.0.1:1"})
	if exitCode(err) != exitUnavailable {
		t.Errorf("no fleetd: exit %d, %v", exitCode(err), err)
	}

	// Re-attach to the async turn once an agent plays "idle".
	f.RunAgents(10*time.Millisecond, "idle")
	out.Reset()
	if err := (&SendCmd{Wait: asyncID, Timeout: 20 * time.Second, out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != fleettest.Reply("later")+"\n" {
		t.Errorf("re-attached reply %q", got)
	}
	out.Reset()
	if err := (&TurnCmd{ID: asyncID, out: &out}).Run(ctx, g); err != nil || !strings.Contains(out.String(), "replied") {
		t.Errorf("turn: %q %v", out.String(), err)
	}
}

func TestRosterAndSessionsPrintTables(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-local-1", "w-local")
	g := shimFor(t, f)
	var out bytes.Buffer
	if err := (&RosterCmd{listing: listing{out: &out}}).Run(fleettest.Ctx(t), g); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "AGENT") || !strings.Contains(lines[1], "w-local-1") || !strings.Contains(lines[1], "idle") {
		t.Errorf("roster table:\n%s", out.String())
	}
	// A registered agent serves a session named after it; no Claude
	// conversation has started in it yet.
	out.Reset()
	if err := (&SessionsCmd{listing{JSON: true, out: &out}}).Run(fleettest.Ctx(t), g); err != nil {
		t.Fatal(err)
	}
	var sessions []projections.Session
	if err := json.Unmarshal(out.Bytes(), &sessions); err != nil || len(sessions) != 1 ||
		sessions[0].Name != "w-local-1" || sessions[0].Agent != "w-local-1" || sessions[0].State != projections.SessionActive || sessions[0].SessionID != "" {
		t.Errorf("sessions --json: %q %v", out.String(), err)
	}
}

// roster --at shows the fleet as it was; turn prints the timeline; cost
// sums what the hooks recorded.
func TestRosterAtTurnTimelineAndCost(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w-local")
	f.RunAgents(10 * time.Millisecond)
	g := shimFor(t, f)
	ctx := fleettest.Ctx(t)
	var out bytes.Buffer
	if err := (&SendCmd{To: "w1", Text: []string{"count", "to", "three"}, Async: true, Timeout: time.Minute, out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out.String())
	if _, err := f.Views.WaitTurn(ctx, id, func(t lifecycle.Turn) bool { return t.State.Final() }); err != nil {
		t.Fatal(err)
	}
	between := time.Now()
	f.Register("w2", "w-local")

	out.Reset()
	if err := (&RosterCmd{At: between.Format(time.RFC3339Nano), listing: listing{out: &out}}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "as of ") || !strings.Contains(got, "w1") || strings.Contains(got, "w2") {
		t.Errorf("roster --at before w2 registered:\n%s", got)
	}
	if err := (&RosterCmd{At: "yesterday-ish", listing: listing{out: &out}}).Run(ctx, g); exitCode(err) != exitRefused {
		t.Errorf("roster --at nonsense: exit %d, %v", exitCode(err), err)
	}

	out.Reset()
	if err := (&TurnCmd{ID: id, out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"queued", "typed", "submitted", "replied", fleettest.Reply("count to three")} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("turn %s lacks %q:\n%s", id, step, out.String())
		}
	}

	out.Reset()
	if err := (&CostCmd{By: "role", Since: "1h", out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	// The fake agents record In = len(text), Out = 7.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "w-local") || !strings.Contains(strings.Join(strings.Fields(lines[3]), " "), "TOTAL 1 14 7") {
		t.Errorf("cost by role:\n%s", out.String())
	}
}

func TestInitLeadWritesTheCharterOnce(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-local-1", "w-local")
	g := shimFor(t, f)
	dir := t.TempDir()
	claudeMD := filepath.Join(dir, "CLAUDE.md")
	if err := os.WriteFile(claudeMD, []byte("# My project\n\nKeep this.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for range 2 {
		if err := (&InitLeadCmd{Dir: dir, out: &out, bin: "fleetd"}).Run(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(claudeMD)
	doc := string(b)
	if strings.Count(doc, leadkit.CharterBegin) != 1 || strings.Count(doc, leadkit.CharterEnd) != 1 || !strings.HasPrefix(doc, "# My project\n\nKeep this.\n") {
		t.Fatalf("CLAUDE.md after two runs:\n%s", doc)
	}
	for _, want := range []string{"## Your team (via fleetd)", "fleetd --url " + g.URL + " roster", "`w-local` — bulk work", "At most 3 at once", "DISPATCH ALL"} {
		if !strings.Contains(doc, want) {
			t.Errorf("charter lacks %q", want)
		}
	}
	if strings.Contains(doc, "`lead`") {
		t.Errorf("charter lists the lead as a worker role")
	}
	cmd, err := os.ReadFile(filepath.Join(dir, ".claude", "commands", "delegate.md"))
	if err != nil || !strings.Contains(string(cmd), "fleetd --url "+g.URL+" send --to role:<role>") || !strings.Contains(string(cmd), "$ARGUMENTS") {
		t.Fatalf("delegate command: %s %v", cmd, err)
	}
	mcpJSON, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if err != nil || !strings.Contains(string(mcpJSON), `"FLEET_AGENT_ID": "lead"`) || !strings.Contains(string(mcpJSON), `"`+g.URL+`",`+"\n"+`        "mcp"`) {
		t.Errorf(".mcp.json does not start 'fleetd --url %s mcp' as agent lead: %v\n%s", g.URL, err, mcpJSON)
	}
	if !strings.Contains(out.String(), "replaced the team charter") {
		t.Errorf("second run said %q", out.String())
	}

	// Without a reachable fleetd the Team design's roles are used.
	other := t.TempDir()
	if err := (&InitLeadCmd{Dir: other, out: &out, bin: "fleetd"}).Run(context.Background(), &Globals{URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(other, "CLAUDE.md"))
	if !strings.Contains(string(b), "`w-claude`") || !strings.Contains(string(b), "`w-local`") {
		t.Errorf("offline charter:\n%s", b)
	}
}
