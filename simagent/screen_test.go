package simagent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// countRules is how many rows are a full-width rule: two while one prompt
// box is on screen.
func countRules(rows []string) int {
	rule := strings.Repeat("─", cols)
	n := 0
	for _, r := range rows {
		if r == rule {
			n++
		}
	}
	return n
}

// The screen, through a terminal emulator, is Claude Code's: bracketed
// paste on before the box first shows; the box at the bottom (rule, "❯"
// and a no-break space, rule, footer), redrawn in place as it changes;
// past prompts and replies above it.
func TestSimAgentDrawsClaudesPromptBox(t *testing.T) {
	term := startTerminal(t, baseEnv("HERDR_AGENT=claude"), "--no-hooks", "--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")
	out := term.output()
	if on, box := strings.Index(out, "\x1b[?2004h"), strings.Index(out, "❯"); on < 0 || on > box {
		t.Errorf("bracketed paste at %d, first ❯ at %d: want it on before the box shows", on, box)
	}

	for _, k := range []string{"a", "b", "c", "\x7f", "\x7f", "\x7f"} {
		term.write(t, k)
	}
	term.write(t, "\x1b[200~hello\x1b[201~")
	rows := term.waitBox(t, "hello")
	if n := countRules(rows); n != 2 {
		t.Errorf("%d rules on screen after editing, want the one box redrawn in place:\n%s", n, strings.Join(rows, "\n"))
	}
	term.write(t, "\r")
	term.waitScreen(t, "the reply", func(rows []string) bool { return contains(rows, "● SIM: hello") })
	rows = term.waitBox(t, "")
	if i, j := slices.Index(rows, "❯ hello"), slices.Index(rows, "● SIM: hello"); i < 0 || j < i {
		t.Errorf("want the past prompt then its reply above the box:\n%s", strings.Join(rows, "\n"))
	}
	if n := countRules(rows); n != 2 {
		t.Errorf("%d rules on screen, want one box:\n%s", n, strings.Join(rows, "\n"))
	}
}

// The traps Claude sets are on screen as in Claude: "!" is bash mode and
// runs a command (no model turn), "?" covers the box with the shortcuts
// and swallows what is typed until Esc, a newline typed without bracketed
// paste submits early, and unknown slash commands are refused.
func TestSimAgentScreenTraps(t *testing.T) {
	term := startTerminal(t, baseEnv("HERDR_AGENT=claude"), "--no-hooks", "--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")

	term.write(t, "\x1b[200~!touch bash-ran\x1b[201~")
	term.waitScreen(t, "the bash-mode box", func(rows []string) bool {
		return slices.Equal(bottom(rows, 4), box("!", "touch bash-ran", "  ! for shell mode"))
	})
	term.write(t, "\r")
	term.waitScreen(t, "the command's output", func(rows []string) bool { return contains(rows, "⎿  (No content)") })
	rows := term.waitBox(t, "")
	if _, err := os.Stat(filepath.Join(term.dir, "bash-ran")); err != nil {
		t.Errorf("the bash-mode command did not run in the agent's directory: %v", err)
	}
	if !contains(rows, "! touch bash-ran") || contains(rows, "● SIM:") {
		t.Errorf("want the command shown and no model reply:\n%s", strings.Join(rows, "\n"))
	}

	term.write(t, "?")
	term.waitScreen(t, "the shortcuts", func(rows []string) bool {
		return strings.TrimSpace(rows[len(rows)-1]) == "Esc to close" && !contains(rows, "❯\u00a0")
	})
	term.write(t, "lost\r")
	term.write(t, "\x1b")
	term.waitBox(t, "")

	term.write(t, "/help\r")
	term.waitScreen(t, "the help", func(rows []string) bool {
		return strings.TrimSpace(rows[len(rows)-1]) == "Esc to close" && contains(rows, "/compact")
	})
	term.write(t, "\x1b")
	term.waitBox(t, "")

	term.write(t, "/nope\r")
	term.waitScreen(t, "the refusal", func(rows []string) bool { return contains(rows, "● Unknown command: /nope") })

	// A terminal without bracketed paste delivers a pasted newline as
	// Enter: the first line runs alone, the rest waits in the box.
	term.write(t, "first line\nsecond line")
	term.waitBox(t, "second line")
	rows = term.waitScreen(t, "the reply", func(rows []string) bool { return contains(rows, "● SIM: first line") })
	if contains(rows, "lost") {
		t.Errorf("keys typed into the shortcuts reached the composer:\n%s", strings.Join(rows, "\n"))
	}
}

// A permission dialog covers the box until Enter answers it; a prompt
// submitted while a turn works is queued and runs after it.
func TestSimAgentDialogAndQueue(t *testing.T) {
	term := startTerminal(t, baseEnv("HERDR_AGENT=claude"), "--no-hooks", "--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")
	term.prompt(t, "ask [block]")
	term.waitScreen(t, "the permission dialog", func(rows []string) bool {
		return strings.TrimSpace(rows[len(rows)-1]) == "Esc to cancel · Tab to amend" && !contains(rows, "❯\u00a0")
	})
	term.write(t, "\r")
	term.waitScreen(t, "the reply", func(rows []string) bool { return contains(rows, "● SIM: ask [block]") })

	term.prompt(t, "first [delay=500ms]")
	term.waitScreen(t, "the working row", func(rows []string) bool { return contains(rows, "esc to interrupt") })
	term.prompt(t, "second")
	rows := term.waitScreen(t, "both replies", func(rows []string) bool { return contains(rows, "● SIM: second") })
	if i, j := slices.Index(rows, "● SIM: first [delay=500ms]"), slices.Index(rows, "● SIM: second"); i < 0 || j < i {
		t.Errorf("want the first reply, then the queued prompt's:\n%s", strings.Join(rows, "\n"))
	}
}

// A permission dialog answered No interrupts its turn, as Claude Code's
// does: no reply, and the box is back for what to do instead.
func TestSimAgentDialogDenied(t *testing.T) {
	term := startTerminal(t, baseEnv("HERDR_AGENT=claude"), "--no-hooks", "--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")
	term.prompt(t, "ask [block]")
	term.waitScreen(t, "the permission dialog", func(rows []string) bool { return contains(rows, "   3. No") })
	term.write(t, "3")
	rows := term.waitScreen(t, "the turn interrupted", func(rows []string) bool {
		return contains(rows, "  ⎿  Interrupted · What should Claude do instead?")
	})
	term.waitBox(t, "")
	if contains(rows, "● SIM: ask [block]") {
		t.Errorf("a denied turn replied:\n%s", strings.Join(rows, "\n"))
	}
}

// Slash commands and bash mode are never model turns: bash mode runs the
// command with no prompt hooks, /compact starts the same session again,
// /clear ends it and starts a new one, an unknown command does nothing,
// and a prompt that starts with a path is an ordinary prompt.
func TestSimAgentSlashCommandsAndBashMode(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	transcripts := t.TempDir()
	term := startTerminal(t, baseEnv("FLEET_AGENT_ID="+agent, "FLEET_HOST=h1", "FLEET_NATS_URL="+srv.ClientURL(),
		"FLEET_SPOOL_DIR="+t.TempDir(), "HERDR_AGENT=claude"),
		"--think", "10ms", "--transcript-dir", transcripts)
	evs := waitEvents(t, log, 2)
	first := evs[0].Data.(events.AgentSession)
	term.waitBox(t, "")

	term.write(t, "\x1b[200~!touch bash-ran\x1b[201~")
	term.waitScreen(t, "the bash-mode box", func(rows []string) bool {
		return slices.Equal(bottom(rows, 4), box("!", "touch bash-ran", "  ! for shell mode"))
	})
	term.write(t, "\r")
	term.prompt(t, "/nope")
	term.prompt(t, "/compact")
	evs = waitEvents(t, log, 4)
	if _, err := os.Stat(filepath.Join(term.dir, "bash-ran")); err != nil {
		t.Errorf("bash mode did not run the command: %v", err)
	}
	if s, ok := evs[2].Data.(events.AgentSession); !ok || s.State != "started" || s.Source != "compact" || s.SessionID != first.SessionID {
		t.Errorf("after bash mode, /nope and /compact: event 2 = %#v, want session %s started from compact", evs[2].Data, first.SessionID)
	}

	term.prompt(t, "/clear")
	evs = waitEvents(t, log, 7)
	end, ok := evs[4].Data.(events.AgentSession)
	if !ok || end.State != "ended" || end.Reason != "clear" || end.SessionID != first.SessionID {
		t.Errorf("event 4 = %#v, want session %s ended by clear", evs[4].Data, first.SessionID)
	}
	next, ok := evs[5].Data.(events.AgentSession)
	if !ok || next.State != "started" || next.Source != "clear" || next.SessionID == first.SessionID {
		t.Fatalf("event 5 = %#v, want a new session started from clear", evs[5].Data)
	}
	if _, err := os.Stat(filepath.Join(transcripts, next.SessionID+".jsonl")); err != nil {
		t.Errorf("the new session has no transcript: %v", err)
	}

	term.prompt(t, "/tmp/foo.go is broken")
	evs = waitEvents(t, log, 11)
	if s, ok := evs[7].Data.(events.AgentSubmitted); !ok || s.Prompt != "/tmp/foo.go is broken" || s.SessionID != next.SessionID {
		t.Errorf("event 7 = %#v, want the path prompt submitted in session %s", evs[7].Data, next.SessionID)
	}
}
