package clitable

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// Roster is the table of 'fleetd roster': one agent a line.
var Roster = Table[projections.Agent]{
	Header: "AGENT\tHOST\tROLE\tKIND\tSTATUS\tTURN\tQUEUE\tMODEL\tTOKENS\tBRANCH\tLAST SEEN",
	Empty:  "(no agents: spawn one with 'fleetd spawn' or adopt a pane with 'fleetd adopt')",
	Line: func(a projections.Agent, now time.Time) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\t%s", a.Agent, Dash(a.Host), Dash(a.Role), Dash(a.Kind), agentStatus(a),
			Dash(a.CurrentTurn), a.QueueDepth, Dash(a.Model), a.Tokens.In, a.Tokens.Out, branch(a.Worktree), ago(now, a.LastSeen))
	},
}

// Sessions is the table of 'fleetd sessions': one named session a line.
var Sessions = Table[projections.Session]{
	Header: "SESSION\tAGENT\tSTATE\tTURNS\tTOKENS\tMODEL\tLAST ACTIVE\tRESUME",
	Empty:  "(no sessions yet)",
	Line: func(s projections.Session, now time.Time) string {
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s", s.Name, Dash(s.Agent), Dash(s.State), s.Turns,
			s.Tokens.In, s.Tokens.Out, Dash(s.Model), ago(now, s.LastActive), Dash(s.Resume))
	},
}

// AsOf is the line above a roster of the past: the time it is as of, in
// this machine's zone, and the last log position folded into it.
func AsOf(w io.Writer, at time.Time, seq uint64) {
	fmt.Fprintf(w, "as of %s (log #%d)\n", at.Local().Format("2006-01-02 15:04:05.000"), seq)
}

// Health is the footer under a live roster: why the fleet is degraded,
// when /healthz says it is; nothing otherwise.
func Health(w io.Writer, h leadshim.Health) {
	if h.Status != "degraded" {
		return
	}
	fmt.Fprintln(w, "\nhealth: degraded")
	for _, r := range h.Reasons {
		fmt.Fprintln(w, "  "+r)
	}
}

// agentStatus is the STATUS column: the status, then whatever a person
// should notice about the agent.
func agentStatus(a projections.Agent) string {
	status := string(a.Status)
	switch {
	case a.FailedToStart != "":
		status += " (failed to start: " + a.FailedToStart + ")"
	case a.Restarting:
		status += " (restarting)"
	case a.Stale:
		// Nothing its host's gateway would say is heard: not even
		// whether it started.
		status += " (stale: its host is silent)"
	case a.Starting:
		status += " (starting)"
	case a.Exited:
		status += " (exited)"
	case a.SessionEnded:
		status += " (session ended)"
	}
	if a.Restarts > 0 {
		status += fmt.Sprintf(" restarts=%d", a.Restarts)
	}
	if a.NeedsAttention != "" {
		status += " NEEDS ATTENTION: " + a.NeedsAttention
	}
	if d := a.Dialog; d != nil {
		// A permission prompt waits for a person: say what it asks and
		// how to answer it from here.
		status += fmt.Sprintf(" ASKS %q (%d options: fleetd answer %s)", d.Question, len(d.Options), a.Agent)
	}
	if a.Violation != "" {
		status += " BOUNDARY"
	}
	switch b := a.Budget; {
	case b.Exhausted():
		status += fmt.Sprintf(" OUT OF BUDGET (%s %s) until %s", b.Scope, b.Limit, b.FreesAt.Local().Format("15:04"))
	case b != nil:
		status += fmt.Sprintf(" BUDGET %.0f%% (%s %s)", 100*b.Used/b.Max, b.Scope, b.Limit)
	}
	return status
}

// WorktreeState says where a worktree's branch stands, to follow its
// name: ", 2 ahead, 3 dirty"; "" when it is level with its base and clean.
func WorktreeState(w events.Worktree) string {
	var notes []string
	if w.Ahead > 0 {
		notes = append(notes, fmt.Sprintf("%d ahead", w.Ahead))
	}
	if w.Dirty > 0 {
		notes = append(notes, fmt.Sprintf("%d dirty", w.Dirty))
	}
	if len(notes) == 0 {
		return ""
	}
	return ", " + strings.Join(notes, ", ")
}

// branch is the roster's BRANCH: the agent's branch, how far ahead of its
// base and how many files are uncommitted after its last turn, and once
// it exited, whether its worktree was removed or kept.
func branch(w events.Worktree) string {
	if w.Branch == "" {
		return "-"
	}
	switch {
	case w.Removed:
		return w.Branch + " (worktree removed)"
	case w.Kept != "":
		return w.Branch + " (worktree KEPT: " + w.Kept + ")"
	}
	if s := WorktreeState(w); s != "" {
		return w.Branch + " (" + strings.TrimPrefix(s, ", ") + ")"
	}
	return w.Branch
}

// Spawned says what 'fleetd spawn' started: the agent, its role, pane and
// host, whether its session has started yet, and its worktree and sandbox
// when it has them.
func Spawned(w io.Writer, reg events.AgentRegistered, started bool) {
	state := "starting"
	if started {
		state = "started"
	}
	fmt.Fprintf(w, "spawned %s (role %s, %s) in pane %s on host %s: %s\n", reg.Agent, reg.Role, reg.EnvClass, reg.Pane, reg.Host, state)
	if wt := reg.Worktree; wt.Path != "" {
		fmt.Fprintf(w, "  worktree %s on branch %s (from %s%s)\n", wt.Path, wt.Branch, wt.Base, WorktreeState(wt))
	}
	if reg.Sandbox != "" {
		fmt.Fprintf(w, "  in sandbox %s\n", reg.Sandbox)
	}
}
