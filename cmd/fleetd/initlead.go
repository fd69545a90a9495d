package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetd/fleetd/leadshim"
)

// InitCmd prepares a directory for a role in the fleet.
type InitCmd struct {
	Lead InitLeadCmd `cmd:"" help:"Give the lead's CLAUDE.md a team charter and a /delegate command."`
}

// InitLeadCmd writes the team charter (between markers, so re-running
// replaces it) into CLAUDE.md and the /delegate slash command into
// .claude/commands, so the lead delegates with one tool call.
type InitLeadCmd struct {
	Dir string `help:"The lead's project directory." default:"." type:"path"`

	out io.Writer
	bin string // how the lead calls fleetd; default fleetdCommand()
}

// Markers delimit the charter fleetd owns inside CLAUDE.md.
const (
	charterBegin = "<!-- fleetd:team:begin — written by 'fleetd init lead'; re-run it to update, edits inside are replaced -->"
	charterEnd   = "<!-- fleetd:team:end -->"
)

// defaultTeamRoles is the rubric of the Team design, used when fleetd is
// not reachable to ask for its roles.
var defaultTeamRoles = []leadshim.RoleState{
	{Name: "w-claude", Description: "Claude workers (Sonnet, on the subscription): reasoning-heavy or high-accuracy subtasks, careful edits."},
	{Name: "w-local", Description: "local-LLM workers (through the model gateway): bulk, cheap or embarrassingly parallel subtasks."},
}

// Run writes the files and says what it wrote.
func (c *InitLeadCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	roles, source := c.roles(ctx, g)
	bin := c.bin
	if bin == "" {
		bin = fleetdCommand()
	}
	if u := strings.TrimRight(g.URL, "/"); u != "" && u != "http://"+leadshim.DefaultAddr {
		bin += " --url " + u // the lead's shell may not have FLEET_URL
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("lead directory: %w", err)
	}
	claudeMD := filepath.Join(c.Dir, "CLAUDE.md")
	old, err := os.ReadFile(claudeMD)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", claudeMD, err)
	}
	updated, replaced := spliceCharter(string(old), charter(bin, roles))
	if err := os.WriteFile(claudeMD, []byte(updated), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", claudeMD, err)
	}
	cmdPath := filepath.Join(c.Dir, ".claude", "commands", "delegate.md")
	if err := os.MkdirAll(filepath.Dir(cmdPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(cmdPath, []byte(delegateCommand(bin)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", cmdPath, err)
	}
	verb := "added the team charter to"
	if replaced {
		verb = "replaced the team charter in"
	}
	fmt.Fprintf(c.out, "fleetd init lead:\n  %s %s (roles %s)\n  wrote %s: /delegate <role> \"<task>\" runs '%s send --to role:<role> …'\n",
		verb, claudeMD, source, cmdPath, bin)
	fmt.Fprintf(c.out, "Start the lead's Claude Code in %s; it learns the live roster with '%s roster'.\n", c.Dir, bin)
	if g.Token != "" {
		fmt.Fprintln(c.out, "The shim needs a token: export FLEET_TOKEN in the lead's environment (it is not written to any file).")
	}
	return nil
}

// roles asks the running fleetd for its roles; without one, the defaults.
func (c *InitLeadCmd) roles(ctx context.Context, g *Globals) ([]leadshim.RoleState, string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	roles, err := newShimClient(g).Roles(ctx)
	if err != nil || len(roles) == 0 {
		return defaultTeamRoles, "from the Team design's defaults; fleetd at " + g.URL + " did not answer"
	}
	var workers []leadshim.RoleState
	for _, r := range roles {
		if r.Name != "lead" {
			workers = append(workers, r)
		}
	}
	return workers, "from fleetd at " + g.URL
}

// fleetdCommand is how the lead's shell should call this fleetd: by name
// when it is on PATH, else by absolute path.
func fleetdCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "fleetd"
	}
	if onPath, err := exec.LookPath("fleetd"); err == nil {
		a, _ := filepath.EvalSymlinks(onPath)
		b, _ := filepath.EvalSymlinks(self)
		if a == b {
			return "fleetd"
		}
	}
	return self
}

// spliceCharter puts section between the markers of doc, replacing an
// existing one, or appends it.
func spliceCharter(doc, section string) (string, bool) {
	block := charterBegin + "\n" + section + charterEnd + "\n"
	start := strings.Index(doc, charterBegin)
	if start >= 0 {
		if end := strings.Index(doc[start:], charterEnd); end >= 0 {
			rest := doc[start+end+len(charterEnd):]
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

func charter(bin string, roles []leadshim.RoleState) string {
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
How to delegate: `+"`/delegate <role> \"<task>\"`"+`, or directly
`+"`%[1]s send --to role:<role> \"<task>\"`"+` — it blocks until a worker of that role replies and
prints the reply (`+"`--json`"+` gives the envelope: agent, model, tokens, duration). A worker sees
only the task you send: include the files, constraints and the output format you need.

Route each subtask by the rubric above. For independent subtasks DISPATCH ALL of them at once
(several sends in one message, each its own tool call), THEN gather — never serialize
independent work. fleetd queues what exceeds a role's cap; that is fine.

If a send times out (exit status 4) it prints the turn id: re-attach with
`+"`%[1]s send --wait <id>`"+` instead of sending the task again. Exit status 1 means the worker's turn
failed; 3 means fleetd refused the send (unknown role or agent, blocked agent).
`, bin)
	return b.String()
}

func delegateCommand(bin string) string {
	return fmt.Sprintf(`---
description: Delegate a task to a fleetd worker role and wait for its reply
argument-hint: <role> "<task>"
allowed-tools: Bash(%[1]s send:*), Bash(%[1]s roster:*), Bash(%[1]s turn:*)
---
Delegate this through fleetd: $ARGUMENTS

The first word is the worker role (for example w-claude or w-local); the rest is the task.
Run exactly one Bash command, quoting the task as one argument:

    %[1]s send --to role:<role> "<task>"

It blocks until a worker of that role replies and prints the reply. Use the reply as the
result of this subtask. If the command exits with status 4 it timed out and printed a turn id:
run `+"`%[1]s send --wait <id>`"+` rather than sending the task again. If the role is unknown
(exit status 3), run `+"`%[1]s roster`"+` to see which roles have agents.
`, bin)
}
