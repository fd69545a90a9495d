package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fleetd/fleetd/internal/clitable"
	"github.com/fleetd/fleetd/leadshim"
)

// SendCmd sends one turn to an agent or a role through the lead shim and,
// unless --async, waits for the reply.
type SendCmd struct {
	To      string        `short:"t" help:"Agent id (w-claude-1) or role:<role> (role:w-local)." placeholder:"TARGET"`
	Text    []string      `arg:"" optional:"" help:"The prompt (words are joined); '-' reads it from stdin (one trailing newline dropped). It reaches the model as sent, control sequences removed; text Claude Code would not keep (a leading /command, tabs, long texts) arrives as a file in the agent's .fleet/inbox/."`
	Command string        `help:"Type a slash command on purpose instead of a prompt (e.g. /clear, '/compact focus on tests'); the role must allow it (default /clear and /compact)." placeholder:"/CMD"`
	Async   bool          `help:"Do not wait: print the turn id and return."`
	Timeout time.Duration `help:"How long the turn may take; the call waits as long." default:"10m"`
	Context []string      `help:"Context keys or tags for the turn, comma-separated (k1,tag:api); with --job they pick the slice of the job's context the prompt carries." sep:","`
	Job     string        `help:"Job whose context store --context is resolved against (default: this pane's FLEET_JOB): the recorded slice is appended to the prompt." env:"FLEET_JOB" placeholder:"ID"`
	From    string        `help:"Sender recorded on the turn." default:"lead"`
	JSON    bool          `name:"json" help:"Print the reply envelope as JSON instead of the reply text."`
	Wait    string        `help:"Re-attach to turn ID (after a timeout or a restart) instead of sending." placeholder:"ID"`

	out io.Writer
	in  io.Reader
}

// Help explains the exit statuses a script can branch on.
func (c *SendCmd) Help() string {
	return "Exit status: 0 replied, 1 the turn failed, 3 refused (bad request, unknown agent or role, blocked), " +
		"4 timed out (the turn id is printed to re-attach), 5 fleetd or NATS unreachable."
}

// Run sends the turn, or re-attaches with --wait.
func (c *SendCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	if c.in == nil {
		c.in = os.Stdin
	}
	cl := newShimClient(g)
	if c.Wait != "" {
		if c.To != "" || len(c.Text) > 0 {
			return exitError{code: exitRefused, err: errors.New("--wait re-attaches to a turn: give no --to or text")}
		}
		return c.reattach(ctx, cl, c.Wait)
	}
	text, err := c.text()
	if err != nil {
		return err
	}
	wait := !c.Async
	msg := leadshim.Message{To: c.To, Text: text, Command: c.Command, From: c.From, Context: c.Context, Job: c.Job, Timeout: c.Timeout.String(), Wait: &wait}
	if c.Async {
		acc, err := cl.SendAsync(ctx, msg)
		if err != nil {
			return exitFor(err)
		}
		if c.JSON {
			return clitable.JSON(c.out, acc)
		}
		_, err = fmt.Fprintln(c.out, acc.ID)
		return err
	}
	env, err := cl.Send(ctx, msg)
	if err != nil {
		if id, ok := leadshim.TimedOut(err); ok {
			return exitError{code: exitTimeout, err: fmt.Errorf("timeout: turn %s did not finish within %s\n%s", id, c.Timeout, reattachHint(id))}
		}
		return exitFor(err)
	}
	return c.print(env)
}

func (c *SendCmd) text() (string, error) {
	if c.To == "" {
		return "", exitError{code: exitRefused, err: errors.New("--to is required: an agent id or role:<role>")}
	}
	text := strings.Join(c.Text, " ")
	if text == "-" {
		b, err := io.ReadAll(c.in)
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		// A file or a heredoc ends with a newline that is not part of
		// the message (as in $(cat file)).
		text = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	switch {
	case c.Command != "" && text != "":
		return "", exitError{code: exitRefused, err: errors.New("give a prompt or --command, not both")}
	case c.Command != "":
		return "", nil
	case strings.TrimSpace(text) == "":
		return "", exitError{code: exitRefused, err: errors.New("no prompt text: give it as arguments or '-' for stdin (or --command /clear)")}
	}
	return text, nil
}

// reattach long-polls a turn until it is final or --timeout passes.
func (c *SendCmd) reattach(ctx context.Context, cl *leadshim.Client, id string) error {
	env, err := cl.Turn(ctx, id, c.Timeout.String())
	if err != nil {
		return exitFor(err)
	}
	if env.Status != "replied" && env.Status != "failed" {
		if c.JSON {
			_ = clitable.JSON(c.out, env)
		}
		return exitError{code: exitTimeout, err: fmt.Errorf("turn %s is %s after %s\n%s", id, env.Status, c.Timeout, reattachHint(id))}
	}
	return c.print(env)
}

// print writes the reply (or the envelope) and maps a failed turn to its
// exit status.
func (c *SendCmd) print(env leadshim.Envelope) error {
	var err error
	if c.JSON {
		err = clitable.JSON(c.out, env)
	} else {
		err = clitable.Reply(c.out, env)
	}
	if err != nil {
		return err
	}
	if env.Status == "failed" {
		return exitError{code: exitFailed, err: fmt.Errorf("turn %s on %s failed: %s %s", env.ID, env.Agent, env.Reason, env.Message)}
	}
	return nil
}
