package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fleetd/fleetd/internal/clitable"
)

// AnswerCmd answers the dialog an agent is blocked on (a permission
// prompt): without an option it shows the dialog; with one it has the
// agent's gateway type it, and returns once the dialog went.
type AnswerCmd struct {
	Agent  string `arg:"" help:"The agent blocked on a dialog ('fleetd roster' shows it)."`
	Option int    `arg:"" optional:"" help:"The option to choose, from 1 as the dialog numbers them; leave it out to see the dialog."`
	From   string `default:"lead" help:"Who answers, as the log records it."`
	JSON   bool   `name:"json" help:"Print the result as JSON."`

	out io.Writer
}

// Run shows or answers the agent's dialog.
func (c *AnswerCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	client := newShimClient(g)
	if c.Option == 0 {
		agents, err := client.Roster(ctx)
		if err != nil {
			return exitFor(err)
		}
		for _, a := range agents {
			if a.Agent != c.Agent {
				continue
			}
			if a.Dialog == nil {
				return fmt.Errorf("agent %s shows no dialog (status %s)", a.Agent, a.Status)
			}
			if c.JSON {
				return clitable.JSON(c.out, a.Dialog)
			}
			fmt.Fprintf(c.out, "%s asks: %s\n", a.Agent, a.Dialog.Question)
			if a.Dialog.Title != "" {
				fmt.Fprintf(c.out, "  %s\n", a.Dialog.Title)
			}
			if a.Dialog.Detail != "" {
				fmt.Fprintf(c.out, "  %s\n", a.Dialog.Detail)
			}
			for i, o := range a.Dialog.Options {
				fmt.Fprintf(c.out, "  %d. %s\n", i+1, o)
			}
			fmt.Fprintf(c.out, "answer with: fleetd answer %s <option>\n", a.Agent)
			return nil
		}
		return fmt.Errorf("no agent %q in the roster", c.Agent)
	}
	res, err := client.Answer(ctx, c.Agent, c.Option, c.From)
	return printResult(c.out, c.JSON, res, err, func(w io.Writer) {
		fmt.Fprintf(w, "%s: answered %d. %s to %q\n", res.Agent, res.Option, res.Label, res.Question)
	})
}
