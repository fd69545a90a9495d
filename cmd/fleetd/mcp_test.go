package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/mcpserver"
)

// mcpSession runs `fleetd mcp` for agent against the shim at url, as
// Claude Code would (a child process speaking MCP on stdio), and returns
// an SDK client session on it.
func mcpSession(t *testing.T, agent, url string, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(fleetdBin, "mcp", "--url", url)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "FLEET_AGENT_ID="+agent), env...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("fleetd mcp for %s: %v", agent, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool, within a minute, and returns the text of its
// result and whether that is a tool error; err is a protocol error.
func callTool(cs *mcp.ClientSession, tool string, args map[string]any) (text string, isError bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

// callJSON calls a tool that must succeed and decodes its JSON result.
func callJSON[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) T {
	t.Helper()
	text, isError, err := callTool(cs, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if isError {
		t.Fatalf("%s: tool error %s", tool, text)
	}
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s result %q: %v", tool, text, err)
	}
	return v
}

// registerMain puts a simulated main, idle, on the roster of host
// testhost: what the gateway and the main's hooks would write.
func registerMain(t *testing.T, log events.Log, agent string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range []events.Data{
		events.AgentRegistered{Agent: agent, Host: "testhost", Pane: "p-" + agent, Role: "main", Tier: 1},
		events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"},
	} {
		if _, err := log.Append(ctx, events.Event{Subject: agent, Data: d}); err != nil {
			t.Fatal(err)
		}
	}
}

// nudgesOf folds agent's events and returns its nudge turns.
func nudgesOf(t *testing.T, log events.Log, agent string) []lifecycle.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	book := lifecycle.NewBook()
	var out []lifecycle.Turn
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{"fleet.agent." + agent + ".>"}}) {
		if err != nil {
			t.Fatal(err)
		}
		if tr, ok := book.Apply(ev); ok && tr.Nudge {
			out = append(out, tr)
		}
	}
	return out
}

// Two mains talk through their inboxes with `fleetd up` killed (-9) and
// restarted between the send and the pull: B is nudged, the message is
// still there after the restart and handed to B once, B's reply lands in
// A's inbox, and once acknowledged nothing comes back, restart or not.
func TestMainsTalkThroughInboxesAcrossAKilledFleetd(t *testing.T) {
	dataDir := t.TempDir()
	rolesFile := filepath.Join(t.TempDir(), "roles.json")
	if err := os.WriteFile(rolesFile, []byte(`{"roles": {"main": {"tier": 1, "inbox": true, "description": "mains"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	up := startUp(t, dataDir, "--roles", rolesFile)
	log, _ := connectLog(t, up.url)
	registerMain(t, log, "main-a")
	registerMain(t, log, "main-b")

	a := mcpSession(t, "main-a", up.http)
	sent := callJSON[mcpserver.Delivered](t, a, "send", map[string]any{"to": "main-b", "text": "which port does the API use?"})
	if !sent.Inbox || sent.Message == "" {
		t.Fatalf("send to main-b = %+v, want it in main-b's inbox", sent)
	}
	// B is idle: fleetd queues it one nudge.
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if n := nudgesOf(t, log, "main-b"); len(n) != 1 || !strings.Contains(n[0].Text, "inbox") {
			return fmt.Errorf("main-b's nudges = %+v, want one", n)
		}
		return nil
	})

	kill := func(p *upProcess) {
		t.Helper()
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.cmd.Wait()
	}
	kill(up)
	up = startUp(t, dataDir, "--roles", rolesFile)
	log, _ = connectLog(t, up.url)

	b := mcpSession(t, "main-b", up.http)
	got := callJSON[mcpserver.InboxResult](t, b, "inbox", map[string]any{"wait": "10s"})
	if len(got.Messages) != 1 || got.Messages[0].ID != sent.Message || got.Messages[0].From != "main-a" || got.Messages[0].Deliveries != 1 {
		t.Fatalf("main-b's inbox after the restart = %+v, want main-a's message, delivered once", got.Messages)
	}
	callJSON[map[string]any](t, b, "reply", map[string]any{"id": sent.Message, "text": "8443"})

	a = mcpSession(t, "main-a", up.http)
	ans := callJSON[mcpserver.InboxResult](t, a, "inbox", map[string]any{"wait": "20s"})
	if len(ans.Messages) != 1 || ans.Messages[0].ReplyTo != sent.Message || ans.Messages[0].Text != "8443" {
		t.Fatalf("main-a's inbox = %+v, want main-b's answer", ans.Messages)
	}
	callJSON[mcpserver.InboxResult](t, a, "inbox", map[string]any{"ack": []string{ans.Messages[0].ID}})
	if n := nudgesOf(t, log, "main-b"); len(n) != 1 {
		t.Errorf("main-b nudged %d times, want once (its nudge was still open)", len(n))
	}

	// Acknowledged is final: after another kill, both inboxes are empty.
	kill(up)
	up = startUp(t, dataDir, "--roles", rolesFile)
	for _, agent := range []string{"main-a", "main-b"} {
		cs := mcpSession(t, agent, up.http)
		if got := callJSON[mcpserver.InboxResult](t, cs, "inbox", map[string]any{}); len(got.Messages) != 0 {
			t.Errorf("%s's inbox after its messages were acknowledged and fleetd restarted = %+v, want empty", agent, got.Messages)
		}
	}
}

// The stock nats CLI reads an inbox as its agent would: the consumer
// shows the message pending, `nats consumer next` hands it out and
// acknowledges it, and then fleetd has nothing left to hand out.
func TestNatsCLIReadsAnInbox(t *testing.T) {
	natsBin := requireTool(t, "nats", "go install github.com/nats-io/natscli/nats@v0.5.0")
	up := startUp(t, t.TempDir())
	log, _ := connectLog(t, up.url)
	registerMain(t, log, "main-b")
	client := leadshim.NewClient(up.http, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Pulling opens the inbox (the consumer), empty yet.
	if b, err := client.Inbox(ctx, "main-b", 0, ""); err != nil || len(b.Messages) != 0 {
		t.Fatalf("first pull = %+v, %v", b, err)
	}
	m, err := client.Post(ctx, "main-b", leadshim.InboxPost{From: "lead", Text: "tap me"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		return mustNats(ctx, t, natsBin, up.url, args...)
	}
	var info struct {
		NumPending uint64 `json:"num_pending"`
	}
	if out := run("consumer", "info", events.Stream, "inbox-main-b", "--json"); json.Unmarshal([]byte(out), &info) != nil || info.NumPending != 1 {
		t.Errorf("nats consumer info: %s; want one message pending", out)
	}
	if out := run("consumer", "next", events.Stream, "inbox-main-b", "--count", "1", "--raw"); !strings.Contains(out, m.ID) || !strings.Contains(out, "tap me") {
		t.Errorf("nats consumer next = %s; want the message %s", out, m.ID)
	}
	if b, err := client.Inbox(ctx, "main-b", 0, ""); err != nil || len(b.Messages) != 0 {
		t.Errorf("pull after nats took and acknowledged it = %+v, %v; want nothing", b.Messages, err)
	}
}
