package herdrtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// detectLoop is herdr's detection tick: every DetectInterval it asks each
// pane's PTY for its foreground process group, names the agent running
// there, and re-evaluates the pane's state.
func (s *Server) detectLoop() {
	tick := time.NewTicker(s.cfg.DetectInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		panes := make([]*pane, 0, len(s.panes))
		for _, p := range s.panes {
			panes = append(panes, p)
		}
		s.mu.Unlock()
		for _, p := range panes {
			agent := foregroundAgent(p)
			s.mu.Lock()
			if !p.gone {
				s.detectedLocked(p, agent)
				s.recomputeLocked(p)
			}
			s.mu.Unlock()
		}
	}
}

// foregroundAgent names the agent in the pane's foreground process group:
// the HERDR_AGENT hint in that process's environment (how wrappers declare
// themselves), else its command name if it is claude or claude-code.
func foregroundAgent(p *pane) string {
	pgid := p.tty.Foreground()
	if pgid <= 0 {
		return ""
	}
	proc := "/proc/" + strconv.Itoa(pgid)
	if environ, err := os.ReadFile(proc + "/environ"); err == nil {
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("HERDR_AGENT=")); ok && len(v) > 0 {
				return normaliseAgent(string(v))
			}
		}
	}
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil {
		return ""
	}
	switch name := strings.TrimSpace(string(comm)); name {
	case "claude", "claude-code":
		return "claude"
	}
	return ""
}

// normaliseAgent applies herdr's label normalisation.
func normaliseAgent(a string) string {
	if a == "claude-code" {
		return "claude"
	}
	return a
}

// detectedLocked records a change of foreground agent and emits
// pane_agent_detected (without agent when none remains).
func (s *Server) detectedLocked(p *pane, agent string) {
	if agent == p.detected {
		return
	}
	p.detected = agent
	s.emitLocked(eventData{Type: "pane_agent_detected", PaneID: p.id, WorkspaceID: p.tab.ws.id, Agent: agent})
}

// recomputeLocked derives the pane's internal state: no agent → unknown; a
// hook authority's report wins; otherwise the screen rules decide, with a
// working→idle change held until IdleConfirmations checks in a row agree.
func (s *Server) recomputeLocked(p *pane) {
	var next string
	switch {
	case !p.isAgent():
		next = stUnknown
	case p.hook != nil:
		next = p.hook.state
		p.idleVotes = 0
	case p.detected == "":
		next = p.state // named but not detected: nothing to read
	default:
		next = screenState(p.term.title, p.term.screen(false))
		if p.state == stWorking && next == stIdle {
			p.idleVotes++
			if p.idleVotes < s.cfg.IdleConfirmations {
				next = stWorking
			}
		} else {
			p.idleVotes = 0
		}
	}
	s.setStateLocked(p, next)
}

// setStateLocked applies herdr's status model: any non-idle state marks the
// pane seen; finishing (working or blocked → idle) leaves it unseen (done)
// unless SeenOnCompletion; each change bumps the global state_change_seq
// and emits pane_agent_status_changed.
func (s *Server) setStateLocked(p *pane, next string) {
	if next == p.state {
		return
	}
	prev := p.state
	p.state = next
	s.seq++
	p.stateSeq = s.seq
	switch {
	case next != stIdle:
		p.seen = true
	case prev == stWorking || prev == stBlocked:
		p.seen = s.cfg.SeenOnCompletion
	}
	s.emitLocked(eventData{Type: "pane_agent_status_changed", PaneID: p.id, WorkspaceID: p.tab.ws.id,
		AgentStatus: p.status(), Agent: p.agent()})
}

// screenState is the fake's Claude Code screen manifest, applied to the
// OSC title and the rows of the screen the program shows (herdr's
// bottom-buffer snapshot), first match wins:
//
//   - working: the title starts with a Braille spinner (U+2800–U+28FF);
//   - blocked: a form below the last prompt box ("esc to cancel" together
//     with "enter to confirm" or "enter to select");
//   - idle: a ❯ prompt box line, and idle as the fallback.
//
// The title goes first because Claude Code keeps its prompt box on screen
// while it works: the spinner is what tells a turn in progress apart.
func screenState(title string, rows []string) string {
	prompt, cancel, confirm := -1, -1, -1
	for i, r := range rows {
		l := strings.ToLower(r)
		if strings.HasPrefix(strings.TrimLeft(r, " │|>"), "❯") {
			prompt = i
		}
		if strings.Contains(l, "esc to cancel") {
			cancel = i
		}
		if strings.Contains(l, "enter to confirm") || strings.Contains(l, "enter to select") {
			confirm = i
		}
	}
	if r, _ := utf8.DecodeRuneInString(title); r >= 0x2800 && r <= 0x28ff {
		return stWorking
	}
	if cancel > prompt && confirm > prompt {
		return stBlocked
	}
	return stIdle
}

// stripTitle drops a leading spinner or status glyph from a terminal title,
// as herdr's terminal_title_stripped does ("✳ Claude Code" → "Claude Code").
func stripTitle(t string) string {
	r, n := utf8.DecodeRuneInString(t)
	if n > 0 && (r >= 0x2800 && r <= 0x28ff || r == '✳' || r == '·' || r == '*') {
		return strings.TrimSpace(t[n:])
	}
	return t
}
