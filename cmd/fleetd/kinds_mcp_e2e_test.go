package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
)

// kindMain is one main of the test: its agent, role, work directory and
// how its CLI names fleetd's tools (each prefixes an MCP tool with the
// server's name its own way).
type kindMain struct {
	agent, role, work, kind, toolPrefix string
}

// tool is the name the main's model calls fleetd's tool by.
func (m kindMain) tool(name string) string { return m.toolPrefix + name }

// A main of each kind but Claude Code (tested on its own) — a real Codex,
// Gemini CLI, OpenCode and Pi agent of an inbox role, spawned by fleetd —
// delegates through `fleetd mcp`, which the bridge wrote into that
// agent's own config (Pi, which has no MCP client, gets its tools from
// fleetd's extension, which speaks MCP to `fleetd mcp`): the
// fake API answers each main's prompt with a call of the fleetd send tool
// (under the name its CLI gives it) addressed to a real Claude Code
// worker; fleetd's log shows the task queued for the worker as that
// main's, once; and the tool's result the main's CLI hands back to the
// model is the worker's reply. Then each main sends the next one a note,
// which goes to that main's durable inbox (it reads by pull), and each
// reads its own inbox with the fleetd inbox tool: the note is there, from
// the main that sent it.
func TestRealKindMainsDelegateThroughFleetdMCP(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	codexBin := fakeapi.RequireCodex(t)
	geminiBin := fakeapi.RequireGemini(t)
	openCodeBin := fakeapi.RequireOpenCode(t)
	piBin := fakeapi.RequirePi(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	mains := []kindMain{
		// Codex offers the server's tools in a namespace, mcp__fleetd;
		// the fake answers the marker's whole name in it.
		{agent: "main-cx", role: "m-codex", work: "work-cx", kind: "codex", toolPrefix: "mcp__fleetd__"},
		{agent: "main-gm", role: "m-gemini", work: "work-gm", kind: "gemini", toolPrefix: "mcp_fleetd_"},
		{agent: "main-oc", role: "m-opencode", work: "work-oc", kind: "opencode", toolPrefix: "fleetd_"},
		{agent: "main-pi", role: "m-pi", work: "work-pi", kind: "pi", toolPrefix: "fleetd_"},
	}
	main := map[string]any{"inbox": true, "tier": 1}
	fleet := startClaudeFleet(t, []string{"work-w", "work-cx", "work-gm", "work-oc", "work-pi"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-claude":   claudeRole(claudeBin, baseURL, env, map[string]any{"description": "a real Claude Code worker"}),
			"m-codex":    codexRole(codexBin, baseURL, env, main),
			"m-gemini":   geminiRole(geminiBin, baseURL, env, main),
			"m-opencode": openCodeRole(openCodeBin, baseURL, env, main),
			"m-pi":       piRole(piBin, baseURL, env, main),
		}
	}, "--submit-timeout", "30s")
	seedOpenCodeGlobalConfig(t, fleet.home)
	fleet.spawn(ctx, "w-1", "w-claude", "work-w")
	// The CLIs whose session starts with the first prompt are ready once
	// their box is drawn, which OpenCode took over the bridge's default
	// minute to do with the two cores busy: each spawn waits up to 3
	// minutes, the three at once.
	spawned := make([]error, len(mains))
	var wg sync.WaitGroup
	for i, m := range mains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spawnCtx, spawnCancel := context.WithTimeout(ctx, 4*time.Minute)
			defer spawnCancel()
			spawn := exec.CommandContext(spawnCtx, fleetdBin, "spawn", "--role", m.role, "--name", m.agent, "--cwd", fleet.work(m.work), "--wait", "3m",
				"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
			spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
				"FLEET_NATS_URL="+fleet.up.url, "FLEET_URL="+fleet.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
			if out, err := spawn.CombinedOutput(); err != nil {
				spawned[i] = fmt.Errorf("fleetd spawn %s: %v\n%s", m.agent, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range spawned {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each main's own config names fleetd's MCP server for that main.
	for path, agent := range map[string]string{
		filepath.Join(fleet.dataDir, "codex", "main-cx", "config.toml"):                    "main-cx",
		filepath.Join(fleet.dataDir, "gemini", "main-gm", ".gemini", "settings.json"):      "main-gm",
		filepath.Join(fleet.dataDir, "opencode", "main-oc", "opencode.json"):               "main-oc",
		filepath.Join(fleet.dataDir, "pi", "agents", "main-pi", "extensions", "fleetd.ts"): "main-pi",
	} {
		if cfg := readText(t, path); !strings.Contains(cfg, `"mcp"`) || !strings.Contains(cfg, `"`+agent+`"`) {
			t.Errorf("%s names no fleetd mcp for %s:\n%s", path, agent, cfg)
		}
	}
	fleet.waitReady(ctx, 90*time.Second, "w-1")
	t.Logf("spawned after %v", time.Since(started).Round(time.Millisecond))

	// turns sends each main the prompt of its own, all at once, and
	// returns their answers in the mains' order.
	turns := func(prompt func(m kindMain) string) []sendResult {
		results := make([]sendResult, len(mains))
		var wg sync.WaitGroup
		for i, m := range mains {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = fleet.send(ctx, leadshim.Message{To: m.agent, Text: prompt(m), Timeout: "6m"})
			}()
		}
		wg.Wait()
		return results
	}
	call := func(m kindMain, tool string, input any) string {
		b, _ := json.Marshal(input)
		return fmt.Sprintf("[tool=%s:%s]", m.tool(tool), b)
	}
	task := func(m kindMain) string { return "mcp task from the " + m.kind + " main" }
	results := turns(func(m kindMain) string {
		return "delegate it " + call(m, "send", map[string]any{"to": "w-1", "text": task(m), "timeout": "3m"})
	})
	t.Logf("the mains' delegations done after %v", time.Since(started).Round(time.Millisecond))

	log, _ := connectLog(t, fleet.up.url)
	from := map[string][]string{}
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.w-1.queued") {
		if q, ok := ev.Data.(events.AgentQueued); ok {
			from[q.Text] = append(from[q.Text], q.From)
		}
	}
	for i, m := range mains {
		r := results[i]
		if r.err != nil || r.status != 200 || r.env.Status != string(lifecycle.StateReplied) {
			t.Errorf("%s's turn: HTTP %d %v: %s\n%s", m.agent, r.status, r.err, r.body, toolsOffered(fleet.api.Requests(), task(m)))
			continue
		}
		// The task went out once, as the main's own.
		if f := from[task(m)]; !slices.Equal(f, []string{m.agent}) {
			t.Errorf("turns with %s's task queued for w-1 came from %v, want one, from %s", m.agent, f, m.agent)
		}
		// The worker's envelope came back as the tool's result: the
		// main's model saw w-1's reply, and the main's reply carries it.
		var result string
		for _, req := range fleet.api.Requests() {
			if strings.Contains(req.Prompt, task(m)) && len(req.ToolResults) == 1 {
				result = req.ToolResults[0].Text
			}
		}
		want := "ECHO: " + task(m)
		if !strings.Contains(result, `"reply"`) || !strings.Contains(result, want) || !strings.Contains(result, `"w-1"`) {
			t.Errorf("%s's send tool result %q, want w-1's envelope replying %q\n%s", m.agent, result, want, toolsOffered(fleet.api.Requests(), task(m)))
		}
		if !strings.Contains(r.env.Reply, "TOOL_RESULT: ") || !strings.Contains(r.env.Reply, want) {
			t.Errorf("%s's reply %q does not carry w-1's reply %q", m.agent, r.env.Reply, want)
		}
		if a := agentNamed(t, fleet, ctx, m.agent); a.Kind != m.kind {
			t.Errorf("%s's kind on the roster: %q, want %s", m.agent, a.Kind, m.kind)
		}
	}
	if t.Failed() {
		return
	}

	// A ring of notes: each main's send to the next main goes to that
	// main's inbox, not into its pane; then each reads its inbox.
	next := func(i int) kindMain { return mains[(i+1)%len(mains)] }
	note := func(m kindMain) string { return "a note from the " + m.kind + " main" }
	results = turns(func(m kindMain) string {
		i := slices.IndexFunc(mains, func(o kindMain) bool { return o.agent == m.agent })
		return "pass it on " + call(m, "send", map[string]any{"to": next(i).agent, "text": note(m)})
	})
	for i, m := range mains {
		if r := results[i]; r.status != 200 || r.env.Status != string(lifecycle.StateReplied) || !strings.Contains(r.env.Reply, `"inbox": true`) {
			t.Errorf("%s's send to %s: HTTP %d: %s; want it delivered to the inbox", m.agent, next(i).agent, r.status, r.body)
		}
	}
	results = turns(func(m kindMain) string { return "read it " + call(m, "inbox", map[string]any{"max": 10}) })
	t.Logf("the mains' inboxes read after %v", time.Since(started).Round(time.Millisecond))
	for i, m := range mains {
		prev := mains[(i+len(mains)-1)%len(mains)]
		var pulled struct {
			Messages []struct{ From, Text string }
		}
		// Each CLI hands the tool's JSON to the model in its own
		// wrapping (Codex after "Output:", Gemini in <untrusted_context>).
		r := results[i]
		_, result, _ := strings.Cut(r.env.Reply, "\nTOOL_RESULT: ")
		if a, b := strings.Index(result, "{"), strings.LastIndex(result, "}"); a >= 0 && b > a {
			result = result[a : b+1]
		}
		if r.status != 200 || json.Unmarshal([]byte(result), &pulled) != nil {
			t.Errorf("%s's inbox read: HTTP %d: %s", m.agent, r.status, r.body)
			continue
		}
		if !slices.ContainsFunc(pulled.Messages, func(msg struct{ From, Text string }) bool { return msg.From == prev.agent && msg.Text == note(prev) }) {
			t.Errorf("%s's inbox held %+v, want %s's note %q", m.agent, pulled.Messages, prev.agent, note(prev))
		}
	}

	// Pi makes a new extension runtime for each session: after a /clear
	// the Pi main still has fleetd's tools, and its runtime's `fleetd mcp`
	// is one process, the old one ended with its session.
	pm := mains[len(mains)-1]
	if r := fleet.send(ctx, leadshim.Message{To: pm.agent, Command: "/clear", Timeout: "2m"}); r.status != 200 || r.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("/clear for %s: HTTP %d: %s", pm.agent, r.status, r.body)
	}
	r := fleet.send(ctx, leadshim.Message{To: pm.agent, Text: "who is there " + call(pm, "roster", map[string]any{}), Timeout: "3m"})
	if r.status != 200 || !strings.Contains(r.env.Reply, "TOOL_RESULT: ") || !strings.Contains(r.env.Reply, `"w-1"`) {
		t.Errorf("%s's roster after /clear: HTTP %d: %s", pm.agent, r.status, r.body)
	}
	servers := func() (n int) {
		cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, c := range cmdlines {
			b, _ := os.ReadFile(c)
			if strings.Contains(string(b), "mcp\x00--agent\x00"+pm.agent+"\x00") {
				n++
			}
		}
		return n
	}
	// The old runtime's server ends a moment after its session does.
	deadline := time.Now().Add(10 * time.Second)
	for servers() != 1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := servers(); n != 1 {
		t.Errorf("%d `fleetd mcp --agent %s` processes after /clear, want 1", n, pm.agent)
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}

// toolsOffered names, for a failure, the tools of fleetd's server the
// requests carrying text offered the model.
func toolsOffered(reqs []fakeapi.Request, text string) string {
	re := regexp.MustCompile(`"(?:name|namespace)":\s*"([^"]*fleetd[^"]*)"`)
	seen := map[string]bool{}
	for _, r := range reqs {
		if !strings.Contains(r.Prompt, text) {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(string(r.Body), -1) {
			seen[m[1]] = true
		}
	}
	return fmt.Sprintf("fleetd's tools offered with %q: %v", text, slices.Sorted(maps.Keys(seen)))
}
