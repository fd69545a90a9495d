package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
)

// textCase is one kind of text a lead sends.
type textCase struct {
	name    string
	text    string
	command string
	// status is the HTTP status the send must get: 200 (delivered), or a
	// 4xx when it is refused up front.
	status int
	// delivery is how the text must be typed (events.AgentTyped.Delivery).
	delivery string
	// attached: the file delivery's content must come back in the API
	// request, attached to the prompt (Claude Code attaches small files).
	attached bool
	// failedWith: the turn must fail (HTTP 200, status failed) with a
	// message holding this.
	failedWith string
}

// Any text a lead sends reaches the real Claude Code's model exactly as
// the text rule makes it (lifecycle.Normalize), or is refused up front;
// none wedges the agent (a canary turn after each case is answered) and
// none runs a shell command (no marker file is ever created), also after
// the agent's session ended. Each case's text is what real leads send:
// the measurements behind the delivery of each are in
// docs/claude-composer.md.
func TestRealClaudeReceivesAnyTextExactlyOrItIsRefused(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	started := time.Now()

	fleet := startClaudeFleet(t, []string{"work", "work-new", "work-wrap", "work-fresh"}, func(baseURL string, env map[string]string) map[string]any {
		role := func(command []string) map[string]any {
			return map[string]any{"command": command, "env_class": "gateway", "base_url": baseURL, "env": env,
				"commands": []string{"/clear", "/compact", "/exit", "/help"}}
		}
		return map[string]any{
			"w-local": role([]string{claudeBin, "--settings", "{settings}"}),
			// A launch herdr cannot see through: the pane's foreground
			// process is the wrapper shell, not claude.
			"w-wrapped": role([]string{"sh", "-c", claudeBin + ` --settings "$0"; echo wrapper done`, "{settings}"}),
			// Every prompt turn starts from a clean context.
			"w-fresh": func() map[string]any {
				r := role([]string{claudeBin, "--settings", "{settings}"})
				r["fresh_context"] = true
				return r
			}(),
		}
	}, "--submit-timeout", "30s", "--exit-grace", "3s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "t-1", "w-local", "work")
	fleet.waitReady(ctx, 90*time.Second, "t-1")
	t.Logf("t-1 ready after %v", time.Since(started).Round(time.Millisecond))

	big := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %06d: the quick brown fox jumps over the lazy dog\n", i)
		}
		return b.String()[:n-1] + "."
	}
	cases := []textCase{
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file", attached: true},
		{name: "a leading bang (bash mode)", text: "!touch PWNED-bang.txt", status: 200, delivery: "pieces"},
		{name: "a leading bang, over lines", text: "!touch PWNED-bang2.txt\nand this second line\nand a third", status: 200, delivery: "pieces"},
		{name: "a lone question mark", text: "?", status: 200, delivery: "paste"},
		{name: "a leading question mark", text: "? what does this do", status: 200, delivery: "paste"},
		{name: "a leading hash", text: "#remember this", status: 200, delivery: "paste"},
		{name: "a leading ampersand", text: "&run in background", status: 200, delivery: "paste"},
		{name: "a leading at sign", text: "@nobody please answer", status: 200, delivery: "paste"},
		{name: "a path is not a command", text: "/tmp/foo.go is broken, fix it", status: 200, delivery: "paste"},
		// Mode characters alone, and a slash command after white space
		// (Claude Code trims before it looks for a command).
		{name: "a bare slash", text: "/", status: 200, delivery: "file", attached: true},
		{name: "a bare bang", text: "!", status: 200, delivery: "pieces"},
		{name: "a bare hash", text: "#", status: 200, delivery: "paste"},
		{name: "a bare at sign", text: "@", status: 200, delivery: "paste"},
		{name: "a bare ampersand", text: "&", status: 200, delivery: "paste"},
		{name: "a slash command after spaces", text: "  /help is a slash after spaces", status: 200, delivery: "file", attached: true},
		{name: "a slash command after a newline", text: "\n/help me", status: 200, delivery: "file", attached: true},
		{name: "a slash and a space", text: "/ hello there", status: 200, delivery: "file", attached: true},
		{name: "a bang after spaces", text: "  !touch PWNED-space.txt", status: 200, delivery: "paste"},
		// A lone ESC is removed alone: the letters after it stay.
		{name: "a lone ESC before a space and letters", text: "lonely \x1b escape", status: 200, delivery: "paste"},
		{name: "a doubled ESC", text: "double \x1b\x1b escape", status: 200, delivery: "paste"},
		{name: "CRLF and a lone CR", text: "line one\r\nline two\rline three", status: 200, delivery: "paste"},
		{name: "control sequences", text: "\x1b[31mred\x1b[0m text\x03 and\x7f a \x1b]0;title\x07bell", status: 200, delivery: "paste"},
		{name: "a trailing backslash", text: `the path is C:\`, status: 200, delivery: "pieces"},
		{name: "many lines", text: "code:\n    func main() {\n        fmt.Println(\"hi\")\n    }\nend of code", status: 200, delivery: "pieces"},
		{name: "tabs", text: "code:\n\tfunc main() {}", status: 200, delivery: "file", attached: true},
		{name: "a trailing newline", text: "fix the tests\n", status: 200, delivery: "file", attached: true},
		{name: "non-ASCII", text: "naïve café — 日本語 ❯ ✓ 🎉 \u00e9", status: 200, delivery: "paste"},
		// Claude Code composes "e" + U+0301 into "é" (Unicode NFC).
		{name: "a combining accent", text: "cafe\u0301", status: 200, delivery: "file", attached: true},
		{name: "a 2 KB text", text: big(2048), status: 200, delivery: "pieces"},
		{name: "a 200 KB text", text: big(200 << 10), status: 200, delivery: "file"},
		{name: "a 1 MiB text", text: big(1 << 20), status: 200, delivery: "file"},
		{name: "an explicit /clear", command: "/clear", status: 200, delivery: "command"},
		{name: "an explicit /compact", command: "/compact", status: 200, delivery: "command"},
		// A command that opens a dialog nobody answers: the dialog is
		// closed (the canary after it is answered) and the turn says so.
		{name: "a command that opens a dialog", command: "/help", status: 200, failedWith: "waits for a person's key"},
		{name: "over 1 MiB", text: big(1<<20 + 1), status: http.StatusRequestEntityTooLarge},
		{name: "empty once normalised", text: "\x1b[31m\x1b[0m\x03", status: http.StatusBadRequest},
		{name: "a command the role does not allow", command: "/login", status: http.StatusBadRequest},
		{name: "text and command", text: "hello", command: "/clear", status: http.StatusBadRequest},
		{name: "neither text nor command", status: http.StatusBadRequest},
	}
	fleet.textTable(ctx, log, "t-1", fleet.work("work"), cases)
	t.Logf("%d cases after %v", len(cases), time.Since(started).Round(time.Millisecond))

	// A multi-line text sent the moment a new agent is registered: it is
	// typed only once the agent's prompt box is up, so it arrives whole.
	fleet.spawn(ctx, "t-new", "w-local", "work-new")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if _, ok := findAgent(roster, "t-new"); !ok {
			return fmt.Errorf("t-new is not on the roster yet")
		}
		return nil
	})
	fleet.checkText(ctx, log, "t-new", textCase{text: "first:\nsecond line\nthird line\nfourth line", status: 200, delivery: "pieces"}, fleet.work("work-new"))

	// An agent launched through a wrapper herdr cannot see through (not
	// the pane's foreground process): typed as any Claude Code, with
	// pane.send_input and Enter once its box shows the text, because the
	// agent's hooks say it is idle.
	fleet.spawn(ctx, "t-wrap", "w-wrapped", "work-wrap")
	fleet.waitReady(ctx, 90*time.Second, "t-wrap")
	wrapped := fleet.checkText(ctx, log, "t-wrap", textCase{text: "through the wrapper", status: 200, delivery: "paste"}, fleet.work("work-wrap"))
	if wrapped.Method != herdrbridge.MethodLanded {
		t.Errorf("wrapped agent typed with %q, want %s", wrapped.Method, herdrbridge.MethodLanded)
	}
	fleet.checkText(ctx, log, "t-wrap", textCase{text: "!touch PWNED-wrap.txt", status: 200, delivery: "pieces"}, fleet.work("work-wrap"))

	// A fresh-context role: /clear is typed before each prompt, so the
	// model sees no earlier turn (the request holds one user message).
	fleet.spawn(ctx, "t-fresh", "w-fresh", "work-fresh")
	fleet.waitReady(ctx, 90*time.Second, "t-fresh")
	for _, text := range []string{"fresh one: remember the word KUMQUAT", "fresh two: which word?"} {
		turn := fleet.checkText(ctx, log, "t-fresh", textCase{text: text, status: 200, delivery: "paste"}, fleet.work("work-fresh"))
		if !turn.Clear {
			t.Errorf("%q: typed without /clear first", text)
		}
	}
	for _, req := range fleet.api.Requests() {
		if req.Prompt == "fresh two: which word?" && strings.Contains(string(req.Body), "KUMQUAT") {
			t.Errorf("the second fresh turn's request still holds the first turn")
		}
	}

	// After the session ends (an explicit /exit), nothing is typed into
	// the pane, whose shell is in the foreground again: a send is refused,
	// a queued one fails as agent_exited.
	if r := fleet.send(ctx, leadshim.Message{To: "t-1", Command: "/exit", Timeout: "2m"}); r.status != 200 || r.env.Status != "replied" {
		t.Fatalf("/exit: HTTP %d %s", r.status, r.body)
	}
	checkfor.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if a, _ := findAgent(roster, "t-1"); !a.SessionEnded || a.Ready() {
			return fmt.Errorf("t-1 after /exit: %+v, want session_ended and not ready", a)
		}
		return nil
	})
	if r := fleet.send(ctx, leadshim.Message{To: "t-1", Text: "touch PWNED-after-exit.txt", Timeout: "1m"}); r.status != http.StatusConflict {
		t.Errorf("send after /exit: HTTP %d %s, want 409", r.status, r.body)
	}
	queue := true
	r := fleet.send(ctx, leadshim.Message{To: "t-1", Text: "touch PWNED-queued-after-exit.txt", Timeout: "1m", Queue: &queue})
	if r.status != 200 || r.env.Status != "failed" || r.env.Reason != events.ReasonAgentExited {
		t.Errorf("queued send after /exit: HTTP %d %+v, want failed agent_exited", r.status, r.env)
	}

	// No case ran a shell command.
	marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*"))
	if len(marks) > 0 {
		t.Errorf("marker files were created, so text ran in a shell: %v", marks)
	}
	if out := fleet.herdr.Output(mustPane(t, fleet, ctx, "t-1")); strings.Contains(string(out), "PWNED-after-exit") || strings.Contains(string(out), "PWNED-queued") {
		t.Errorf("text sent after /exit reached the pane")
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}

// checkText sends one case to agent and checks its outcome: refused with
// the case's status and nothing queued, or delivered — typed once as the
// case says, and the model got exactly the normalised text (as the prompt,
// or as the attached file of a file delivery), exactly once.
func (f *claudeFleet) checkText(ctx context.Context, log events.Log, agent string, tc textCase, cwd string) lifecycle.Turn {
	t := f.t
	t.Helper()
	before := len(f.api.Requests())
	r := f.send(ctx, leadshim.Message{To: agent, Text: tc.text, Command: tc.command, Timeout: "90s"})
	if r.status != tc.status {
		t.Fatalf("HTTP %d, want %d: %s", r.status, tc.status, r.body)
	}
	if tc.status != 200 {
		var e leadshim.Error
		if json.Unmarshal(r.body, &e) != nil || e.Err.Code == "" || e.Err.ID != "" {
			t.Errorf("refusal %s: want a JSON error with a code and no turn id", r.body)
		}
		if n := len(f.api.Requests()); n != before {
			t.Errorf("a refused send reached the model (%d requests)", n-before)
		}
		return lifecycle.Turn{}
	}
	if tc.failedWith != "" {
		if r.env.Status != "failed" || !strings.Contains(r.env.Message, tc.failedWith) {
			t.Fatalf("turn %s: %s (%s: %s), want failed with %q", r.env.ID, r.env.Status, r.env.Reason, r.env.Message, tc.failedWith)
		}
		return f.turnFromLog(ctx, log, r.env.ID)
	}
	if r.env.Status != "replied" {
		t.Fatalf("turn %s: %s (%s: %s)", r.env.ID, r.env.Status, r.env.Reason, r.env.Message)
	}
	turn := f.turnFromLog(ctx, log, r.env.ID)
	if turn.Delivery != tc.delivery {
		t.Errorf("delivered by %q, want %q", turn.Delivery, tc.delivery)
	}
	want := lifecycle.NormalizeText(tc.text)
	if tc.command != "" {
		if r.env.Reply != "" {
			t.Errorf("a command turn replied %q, want no reply text", r.env.Reply)
		}
		for _, req := range f.api.Requests()[before:] {
			if strings.Contains(req.Prompt, tc.command) {
				t.Errorf("the command reached the model as a prompt: %q", req.Prompt)
			}
		}
		return turn
	}
	if tc.text != want && !turn.Normalized.Changed() {
		t.Errorf("the text was normalised, but the turn does not say so: %+v", turn.Normalized)
	}
	prompt := want
	if turn.Delivery == herdrbridge.DeliveryFile {
		prompt = turn.Prompt
		b, err := os.ReadFile(turn.File)
		if err != nil || string(b) != want {
			t.Fatalf("the file %s holds %d bytes (%v), want the %d-byte text", turn.File, len(b), err, len(want))
		}
		if !strings.HasPrefix(turn.File, filepath.Join(cwd, herdrbridge.InboxDir)) {
			t.Errorf("file %s is not in the agent's %s", turn.File, herdrbridge.InboxDir)
		}
	}
	var got []fakeapi.Request
	for _, req := range f.api.Requests()[before:] {
		if req.Prompt == prompt {
			got = append(got, req)
		}
	}
	if len(got) != 1 {
		var seen []string
		for _, req := range f.api.Requests()[before:] {
			seen = append(seen, fmt.Sprintf("%.120q", req.Prompt))
		}
		t.Fatalf("the model got the prompt %d times, want 1 (prompts: %v)", len(got), seen)
	}
	if r.env.Reply != "ECHO: "+prompt {
		t.Errorf("reply %.200q, want the echo of the prompt", r.env.Reply)
	}
	if tc.attached {
		if a := got[0].Attached; len(a) != 1 || a[0].Path != turn.File || a[0].Text != want {
			t.Errorf("attached %+v, want %s with the text", a, turn.File)
		}
	}
	return turn
}

// textTable runs each case against agent as a subtest, each followed by a
// canary turn to the same agent, which must be answered: no case may
// leave the agent wedged.
func (f *claudeFleet) textTable(ctx context.Context, log events.Log, agent, cwd string, cases []textCase) {
	t := f.t
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			f.checkText(ctx, log, agent, tc, cwd)
			canary := fmt.Sprintf("canary %d after %s", i, tc.name)
			if r := f.send(ctx, leadshim.Message{To: agent, Text: canary, Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: "+canary {
				t.Fatalf("canary after %q: HTTP %d reply %q %s", tc.name, r.status, r.env.Reply, r.body)
			}
		})
	}
	f.t = t
}

// turnFromLog folds the log into a Book and returns one turn.
func (f *claudeFleet) turnFromLog(ctx context.Context, log events.Log, id string) lifecycle.Turn {
	b := lifecycle.NewBook()
	for _, ev := range readEvents(f.t, ctx, log, "fleet.>") {
		b.Apply(ev)
	}
	t, ok := b.Turn(id)
	if !ok {
		f.t.Fatalf("turn %s is not in the log", id)
	}
	return t
}

// mustPane is the agent's pane, from the roster.
func mustPane(t *testing.T, f *claudeFleet, ctx context.Context, agent string) string {
	roster, err := f.roster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := findAgent(roster, agent)
	if !ok {
		t.Fatalf("%s is not on the roster", agent)
	}
	return a.Pane
}
