package leadkit

import (
	"fmt"
	"strings"

	"github.com/fleetd/fleetd/leadshim"
)

// CharterBegin and CharterEnd delimit the charter fleetd owns inside CLAUDE.md.
const (
	CharterBegin = "<!-- fleetd:team:begin — written by 'fleetd init lead'; re-run it to update, edits inside are replaced -->"
	CharterEnd   = "<!-- fleetd:team:end -->"
)

// DefaultRoles is the rubric of the Team design, used when fleetd is
// not reachable to ask for its roles.
var DefaultRoles = []leadshim.RoleState{
	{Name: "w-claude", Description: "Claude workers (Sonnet, on the subscription): reasoning-heavy or high-accuracy subtasks, careful edits."},
	{Name: "w-local", Description: "local-LLM workers (through the model gateway): bulk, cheap or embarrassingly parallel subtasks."},
}

// SpliceCharter puts section between the markers of doc, replacing an
// existing one, or appends it.
func SpliceCharter(doc, section string) (string, bool) {
	block := CharterBegin + "\n" + section + CharterEnd + "\n"
	start := strings.Index(doc, CharterBegin)
	if start >= 0 {
		if end := strings.Index(doc[start:], CharterEnd); end >= 0 {
			rest := doc[start+end+len(CharterEnd):]
			rest = strings.TrimPrefix(rest, "\n")
			return doc[:start] + block + rest, true
		}
	}
	if doc != "" && !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	if doc != "" {
		doc += "\n"
	}
	return doc + block, false
}

// Charter is the team section of the lead's CLAUDE.md: how to see the
// roster, which roles to route to (from fleetd, or DefaultRoles), and how
// to delegate through bin (the fleetd command the lead's shell runs).
func Charter(bin string, roles []leadshim.RoleState) string {
	var b strings.Builder
	fmt.Fprintf(&b, `## Your team (via fleetd)

You are the team-lead. Delegate through fleetd — never launch workers yourself and never type
into their panes. You plan, route, dispatch and integrate; you own the final answer.

Roster: ask fleetd, do not assume it. `+"`%[1]s roster`"+` lists the live agents (role, status, queue,
model); workers are added and restarted without notice, so address roles, not pane ids.

Roles to route to:
`, bin)
	for _, r := range roles {
		desc := r.Description
		if desc == "" {
			desc = "(no description in the roles file)"
		}
		fmt.Fprintf(&b, "- `%s` — %s", r.Name, desc)
		if r.Model != "" {
			fmt.Fprintf(&b, " Model: %s.", r.Model)
		}
		if r.Cap > 0 {
			fmt.Fprintf(&b, " At most %d at once.", r.Cap)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, `
How to delegate: `+"`/delegate <role> \"<task>\"`"+`, or directly with the fleetd MCP tools
(server `+"`fleetd`"+` in .mcp.json): `+"`send`"+` with to `+"`role:<role>`"+` and the task as text blocks until a
worker of that role replies and returns the envelope (agent, status, reply, tokens, duration);
`+"`roster`"+` and `+"`roles`"+` show who is there. From a shell: `+"`%[1]s send --to role:<role> \"<task>\"`"+`.
A worker sees only the task you send: include the files, constraints and the output format you need.

Long jobs: send with `+"`notify: true`"+` (or `+"`async: true`"+` and `+"`wait`"+` later). With notify the reply
lands in your fleetd inbox: call `+"`inbox`"+` when fleetd tells you something arrived or when you need
the result — do not poll it turn after turn. Messages from other mains come there too; answer them
with `+"`reply`"+`.

Route each subtask by the rubric above. For independent subtasks DISPATCH ALL of them at once
(several sends in one message, each its own tool call), THEN gather — never serialize
independent work. fleetd queues what exceeds a role's cap; that is fine.

If a send times out it names the turn id: call `+"`wait`"+` with it (shell: `+"`%[1]s send --wait <id>`"+`,
after exit status 4) instead of sending the task again. A failed turn says why; a refusal (unknown
role or agent, blocked agent) comes back as the tool's error.
`, bin)
	return b.String()
}

// DelegateCommand is the lead's /delegate slash command
// (.claude/commands/delegate.md): one blocking send to a role, through
// the fleetd MCP tools, with the shell command as the fallback.
func DelegateCommand(bin string) string {
	return fmt.Sprintf(`---
description: Delegate a task to a fleetd worker role and wait for its reply
argument-hint: <role> "<task>"
allowed-tools: mcp__fleetd__send, mcp__fleetd__wait, mcp__fleetd__roster, mcp__fleetd__roles, Bash(%[1]s send:*), Bash(%[1]s roster:*)
---
Delegate this through fleetd: $ARGUMENTS

The first word is the worker role (for example w-claude or w-local); the rest is the task.
Call the fleetd MCP tool send (mcp__fleetd__send) exactly once, with

    to:   "role:<role>"
    text: "<task>"

It blocks until a worker of that role replies and returns the reply envelope. Use its reply as
the result of this subtask. If it timed out it names a turn id: call wait with that id rather
than sending the task again. If the role is unknown, call roles to see which roles have agents.

Only if the fleetd MCP tools are not available, run one Bash command instead, quoting the task
as one argument:

    %[1]s send --to role:<role> "<task>"

(exit status 4: timed out, re-attach with `+"`%[1]s send --wait <id>`"+`; 3: refused, see `+"`%[1]s roster`"+`).
`, bin)
}
