package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/herdrbridge/recording"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// kindScript is how one kind's standard scenarios are played: its CLI,
// its role, and what a person does to it in each.
type kindScript struct {
	kind herdrbridge.Kind
	// bin finds the CLI (skipping when it is absent); version is what
	// the recordings are filed under.
	bin     func(fakeapi.TB) string
	version func(t *testing.T, bin string) string
	role    func(bin, baseURL string, env map[string]string) map[string]any
	// prepare runs once the fleet's home exists, before the spawn.
	prepare func(t *testing.T, f *claudeFleet)
	// dialog is what a person types into the pane to open a dialog or
	// overlay: each a paste, a key name in angle brackets ("<enter>"), or
	// text typed key by key after "type:".
	dialog []string
	// shellKey, typed on an empty composer, switches it into its shell
	// (bash) mode; "" when the kind has none fleetd reads.
	shellKey string
	// permission is a prompt whose tool needs a person's permission, and
	// allow the keys that give it ("" when fleetd's integration of the
	// kind asks none).
	permission string
	allow      []string
	// resume: the role restarts a killed agent resuming its session.
	resume bool
}

// versionLine is the first line of `bin --version`, without the CLI's
// name around the number.
func versionLine(t *testing.T, bin string) string {
	v := cliVersion(t, bin)
	v = strings.TrimSuffix(v, " (Claude Code)")
	if f := strings.Fields(v); len(f) > 0 {
		v = f[len(f)-1] // "codex-cli 0.169.0" → "0.169.0"
	}
	return v
}

// TestRecordClaude records Claude Code's standard scenarios. See
// recordMode.
func TestRecordClaude(t *testing.T) {
	recordKind(t, kindScript{
		kind: herdrbridge.Claude{}, bin: fakeapi.RequireClaude, version: versionLine,
		role: func(bin, baseURL string, env map[string]string) map[string]any {
			return claudeRole(bin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms"})
		},
		dialog:     []string{"/help", "<enter>"},
		shellKey:   "!",
		permission: "echo: touch a file [tool=Bash:touch permission-test.txt]",
		allow:      []string{"enter"},
		resume:     true,
	})
}

// recordKind plays the kind's standard scenarios through one fleet and
// one agent, w-1, recording each: start → ready; a one-line turn; a
// multi-line paste; a text that starts with a mode character; the
// composer switched into shell mode by a person while a turn waits; a
// dialog a person opens while a turn waits, and closes; a permission
// prompt (the agent blocked, then allowed); the process killed (its role
// restarts it); the resumed session's turn.
func recordKind(t *testing.T, s kindScript) {
	requireRecordMode(t)
	bin := s.bin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()

	dir := t.TempDir()
	work := filepath.Join(dir, "work-1")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newClaudeFleet(t, dir, []string{work}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-rec": s.role(bin, baseURL, env)}
	})
	if s.prepare != nil {
		s.prepare(t, f)
	}
	f.herdr = herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t), Env: claudePaneEnv(), Cols: 120, Rows: 40})
	proxy, err := recording.Interpose(f.herdr.Path())
	if err != nil {
		t.Fatal(err)
	}
	f.socket, f.runtime = f.herdr.Path(), []string{"--herdr", f.herdr.Path()}
	f.up = startUp(t, f.dataDir, "--herdr", f.herdr.Path(), "--roles", f.rolesFile, "--heartbeat", "1s", "--submit-timeout", "30s")
	t.Cleanup(func() {
		f.herdr.Close()
		proxy.Close()
		waitGone(t, dir, 20*time.Second)
	})
	t.Cleanup(f.dumpOnFailure)
	log, _ := connectLog(t, f.up.url)
	ping, err := herdrapi.New(proxy.Upstream()).Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{
		t: t, kind: s.kind, agent: "w-1", proxy: proxy, log: log,
		versions: recording.Versions{CLI: s.version(t, bin), Runtime: fmt.Sprintf("herdrtest %s (protocol %d)", ping.Version, ping.Protocol)},
		scrub:    &recording.Scrubber{Literals: map[string]string{work: "$WORK", f.home: "$HOME", dir: "$DIR", f.api.URL(): "$API"}},
		person:   herdrapi.New(proxy.Upstream()),
	}
	roster := f.roster
	// send sends a turn and waits for its reply (from any goroutine);
	// turn is send on the test's own, failing the test on an error.
	send := func(text string) (leadshim.Envelope, error) {
		res := f.send(ctx, leadshim.Message{To: "w-1", Text: text, Timeout: "3m"})
		if res.err != nil || res.status != http.StatusOK || res.env.Status != "replied" {
			return res.env, fmt.Errorf("turn %q: HTTP %d %v %s", text, res.status, res.err, res.body)
		}
		return res.env, nil
	}
	// fatal ends the test, with the agent's screen of the moment.
	fatal := func(err error) {
		t.Helper()
		if a, ok := findAgentNow(ctx, roster, "w-1"); ok {
			if got, rerr := r.person.Read(ctx, herdrapi.ReadRequest{PaneID: a.Pane, Source: herdrapi.SourceVisible}); rerr == nil {
				t.Logf("the screen of %s:\n%s", a.Pane, got.Text)
			}
		}
		t.Fatal(err)
	}
	turn := func(text string) leadshim.Envelope {
		t.Helper()
		env, err := send(text)
		if err != nil {
			fatal(err)
		}
		return env
	}
	// replied waits for a turn sent in a goroutine (later).
	type reply struct {
		env leadshim.Envelope
		err error
	}
	later := func(text string) chan reply {
		done := make(chan reply, 1)
		go func() {
			env, err := send(text)
			done <- reply{env, err}
		}()
		return done
	}
	replied := func(done chan reply) {
		t.Helper()
		if r := <-done; r.err != nil {
			fatal(r.err)
		}
	}
	// settle waits for the agent to be idle again after a turn, its
	// screen too, so that a scenario ends where the next begins.
	settle := func() projections.Agent {
		t.Helper()
		a := agentRow(t, roster, ctx, "w-1", 60*time.Second, "ready", func(a projections.Agent) bool { return a.Ready() && a.CurrentTurn == "" })
		r.screenReady(ctx, a.Pane)
		return a
	}
	// waiting sends a turn and waits until the agent needs attention for
	// reason (the turn waits behind what a person left on screen).
	waiting := func(text, reason string) chan reply {
		t.Helper()
		done := later(text)
		agentRow(t, roster, ctx, "w-1", 60*time.Second, "in need of attention ("+reason+")", func(a projections.Agent) bool {
			return a.NeedsAttention == reason
		})
		return done
	}

	r.begin("start")
	spawnWithin(t, ctx, f, "w-1", "w-rec", "work-1", 4*time.Minute)
	// A kind whose session starts with its first prompt is ready once its
	// empty composer is on screen; it stays "starting" on the roster
	// until that prompt.
	first := agentRow(t, roster, ctx, "w-1", 3*time.Minute, "ready", func(a projections.Agent) bool {
		return s.kind.LazySession() && a.Pane != "" || !a.Starting && a.Ready() && a.SessionID != ""
	})
	r.screenSaysWithin(ctx, first.Pane, herdrbridge.ScreenReady, 3*time.Minute)
	r.look(ctx, first.Pane, "started")
	r.end(ctx, "start")

	r.begin("one-line-turn")
	turn("alpha: remember the word kumquat")
	settle()
	r.end(ctx, "one-line-turn")

	r.begin("multi-line-paste")
	turn("bravo: a text over\nfour lines,\nwhich a composer could fold\ninto a placeholder")
	settle()
	r.end(ctx, "multi-line-paste")

	r.begin("mode-character")
	turn("!charlie: starts with a bang, which must not switch the composer's mode")
	settle()
	r.end(ctx, "mode-character")

	if s.shellKey != "" {
		r.begin("shell-mode")
		r.note(first.Pane, fmt.Sprintf("person types %q on the empty composer", s.shellKey))
		if err := r.person.SendText(ctx, first.Pane, s.shellKey); err != nil {
			t.Fatal(err)
		}
		// A turn sent the moment the key is typed could be read ready
		// before the CLI redraws its composer (a race with a person that
		// no look at a screen can win): the person typed it first.
		r.screenSays(ctx, first.Pane, herdrbridge.AttentionBashMode)
		done := waiting("delta: sent while the composer was in shell mode", herdrbridge.AttentionBashMode)
		r.note(first.Pane, "person presses "+strings.Join(s.kind.CloseKeys(), ", "))
		if err := r.person.SendKeys(ctx, first.Pane, s.kind.CloseKeys()...); err != nil {
			t.Fatal(err)
		}
		replied(done)
		settle()
		r.end(ctx, "shell-mode")
	}

	if len(s.dialog) > 0 {
		r.begin("dialog")
		r.note(first.Pane, "person opens a dialog: "+strings.Join(s.dialog, " "))
		for i, in := range s.dialog {
			if i > 0 {
				time.Sleep(500 * time.Millisecond) // a paste, then its Enter apart
			}
			if key, ok := strings.CutPrefix(in, "<"); ok {
				err = r.person.SendKeys(ctx, first.Pane, strings.TrimSuffix(key, ">"))
			} else if text, ok := strings.CutPrefix(in, "type:"); ok {
				err = r.person.SendText(ctx, first.Pane, text)
			} else {
				err = r.person.SendInput(ctx, first.Pane, in)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// What the kind reads on the dialog's screen is what is recorded
		// (no prompt box, or — a misreading the replay then pins — a
		// draft): the bridge calls for attention with that reason, for
		// a hidden box once it has lasted 10 s (AttentionAfter).
		seen := r.screenSaysOther(ctx, first.Pane, herdrbridge.ScreenReady)
		if seen != herdrbridge.AttentionNoPromptBox {
			t.Logf("%s reads the dialog's screen as %s, not %s", s.kind.Name(), seen, herdrbridge.AttentionNoPromptBox)
		}
		done := waiting("echo: sent while the dialog was open", seen)
		r.note(first.Pane, "person presses "+strings.Join(s.kind.CloseKeys(), ", "))
		if err := r.person.SendKeys(ctx, first.Pane, s.kind.CloseKeys()...); err != nil {
			t.Fatal(err)
		}
		replied(done)
		settle()
		r.end(ctx, "dialog")
	}

	if s.permission != "" {
		r.begin("permission")
		done := later(s.permission)
		agentRow(t, roster, ctx, "w-1", 60*time.Second, "blocked", func(a projections.Agent) bool { return a.Status == events.StatusBlocked })
		r.look(ctx, first.Pane, "blocked")
		// A person reads the question before answering: a key the moment
		// it is drawn may be dropped (Gemini CLI 0.61.0 was seen to), so
		// the answer is given again while the agent stays blocked.
		for try := 0; ; try++ {
			time.Sleep(1500 * time.Millisecond)
			r.note(first.Pane, "person allows: "+strings.Join(s.allow, ", "))
			if err := r.person.SendKeys(ctx, first.Pane, s.allow...); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			if a, ok := findAgentNow(ctx, roster, "w-1"); try == 2 || ok && a.Status != events.StatusBlocked {
				break
			}
		}
		replied(done)
		settle()
		r.end(ctx, "permission")
	}

	if s.resume {
		// Killed while idle, once the conversation holds the first turn:
		// its role restarts it in a new pane, resuming its session.
		before := settle()
		r.begin("killed")
		r.note(before.Pane, "kill -9 the agent's processes")
		f.killClaude(t, before.Pane)
		r.look(ctx, before.Pane, "killed")
		again := agentRow(t, roster, ctx, "w-1", 3*time.Minute, "restarted", func(a projections.Agent) bool {
			return a.Restarts == 1 && a.Pane != before.Pane && (s.kind.LazySession() || !a.Starting && a.Ready())
		})
		r.screenSaysWithin(ctx, again.Pane, herdrbridge.ScreenReady, 3*time.Minute)
		r.look(ctx, again.Pane, "restarted")
		r.end(ctx, "killed")

		r.begin("resumed")
		env := turn("echo: which word did I ask you to remember?")
		settle()
		r.end(ctx, "resumed")
		if !resumedWith(f.api.Requests(), "which word did I ask you to remember?", "kumquat") {
			t.Errorf("the turn after the restart did not carry the earlier conversation (session %s)", env.SessionID)
		}
	}
	r.finish()
}

// findAgentNow is the roster's row of agent, if it can be read now.
func findAgentNow(ctx context.Context, roster func(context.Context) ([]projections.Agent, error), agent string) (projections.Agent, bool) {
	rows, err := roster(ctx)
	if err != nil {
		return projections.Agent{}, false
	}
	return findAgent(rows, agent)
}

// spawnWithin is claudeFleet.spawn with a limit of its own: a CLI that
// takes long to draw its composer on a loaded machine (OpenCode) keeps
// `fleetd spawn` waiting past the client commands' 30 s.
func spawnWithin(t *testing.T, ctx context.Context, f *claudeFleet, name, role, work string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, fleetdBin, append([]string{"spawn", "--role", role, "--name", name, "--cwd", f.work(work),
		"--roles", f.rolesFile, "--data-dir", f.dataDir}, f.runtime...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
		"FLEET_NATS_URL="+f.up.url, "FLEET_URL="+f.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fleetd spawn %s: %v\n%s", name, err, out)
	}
}

// resumedWith reports whether the model was asked prompt with earlier
// (from before the restart) in the same request.
func resumedWith(reqs []fakeapi.Request, prompt, earlier string) bool {
	for _, q := range reqs {
		if strings.Contains(q.Prompt, prompt) && bytes.Contains(q.Body, []byte(earlier)) {
			return true
		}
	}
	return false
}

// TestRecordCodex records Codex's standard scenarios. See recordMode.
// fleetd's CODEX_HOME trusts the working directory, so Codex runs a tool
// in its sandbox without asking; the permission scenario's command asks
// to leave the sandbox (require_escalated), which Codex asks a person
// about (herdrbridge reads that dialog: QuietDialogs).
func TestRecordCodex(t *testing.T) {
	recordKind(t, kindScript{
		kind: herdrbridge.Codex{}, bin: fakeapi.RequireCodex, version: versionLine,
		role: func(bin, baseURL string, env map[string]string) map[string]any {
			return codexRole(bin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms"})
		},
		dialog:     []string{"/permissions", "<enter>"},
		shellKey:   "!",
		permission: `echo: touch a file [tool=exec_command:{"cmd":"touch permission-test.txt","sandbox_permissions":"require_escalated","justification":"a permission test"}]`,
		allow:      []string{"enter"},
		resume:     true,
	})
}

// TestRecordGemini records Gemini CLI's standard scenarios. See
// recordMode.
func TestRecordGemini(t *testing.T) {
	recordKind(t, kindScript{
		kind: herdrbridge.Gemini{}, bin: fakeapi.RequireGemini, version: versionLine,
		role: func(bin, baseURL string, env map[string]string) map[string]any {
			return geminiRole(bin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms"})
		},
		dialog:     []string{"/settings", "<enter>"},
		shellKey:   "!",
		permission: `echo: touch a file [tool=run_shell_command:{"command":"touch permission-test.txt"}]`,
		allow:      []string{"enter"},
		resume:     true,
	})
}

// TestRecordOpenCode records OpenCode's standard scenarios. See
// recordMode. OpenCode asks permission for a command outside its
// directory (fleetd's plugin reports it blocked); "Allow once" is
// selected first.
func TestRecordOpenCode(t *testing.T) {
	recordKind(t, kindScript{
		kind: herdrbridge.OpenCode{}, bin: fakeapi.RequireOpenCode, version: versionLine,
		role: func(bin, baseURL string, env map[string]string) map[string]any {
			return openCodeRole(bin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms"})
		},
		prepare:    func(t *testing.T, f *claudeFleet) { seedOpenCodeGlobalConfig(t, f.home) },
		dialog:     []string{"type:/", "<enter>"},
		shellKey:   "!",
		permission: `echo: touch a file [tool=bash:{"command":"touch ../permission-test.txt","description":"a permission test"}]`,
		allow:      []string{"enter"},
		resume:     true,
	})
}

// TestRecordPi records Pi's standard scenarios. See recordMode. Pi has no
// shell mode of its own (a draft that starts with "!" runs in a shell on
// submit; fleetd reads such a draft as bash mode, and the lead's "!" text
// goes as a file: the mode-character scenario) and asks no permission.
func TestRecordPi(t *testing.T) {
	recordKind(t, kindScript{
		kind: herdrbridge.Pi{}, bin: fakeapi.RequirePi, version: versionLine,
		role: func(bin, baseURL string, env map[string]string) map[string]any {
			return piRole(bin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms"})
		},
		dialog: []string{"/settings", "<enter>"},
		resume: true,
	})
}
