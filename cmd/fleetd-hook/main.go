package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/fleetd/fleetd/claudehook"
)

func main() {
	// No signal context: installing the handlers cost ~1.3 ms of a ~20 ms
	// exec, and a killed hook loses nothing Claude Code would not already
	// have given up on (a spool file is renamed into place whole).
	ctx := context.Background()
	in, ok := parse(os.Args[1:])
	if !ok {
		// Exit 0 all the same: a settings file with a bad command must not
		// fail the agent's turns.
		return
	}
	if exe, err := os.Executable(); err == nil {
		in.Self = []string{exe, in.Event}
	}
	in.Exec(ctx, os.Stdin, os.Stderr, os.Getenv)
}

// parse reads `EVENT [flags]`: the event first, as the settings file and
// the detached finisher (`fleetd-hook stop --finish FILE`) write it.
func parse(args []string) (claudehook.Invocation, bool) {
	fs := flag.NewFlagSet("fleetd-hook", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: fleetd-hook EVENT [--timeout 2s] [--no-herdr] [--after-prompt]\n"+
			"EVENT: session-start, user-prompt-submit, stop, stop-failure, notification, session-end (or Claude's names);\n"+
			"Claude Code runs it with the hook's payload on stdin (see fleetd hooks settings). It always exits 0.")
		fs.PrintDefaults()
	}
	var in claudehook.Invocation
	fs.DurationVar(&in.Timeout, "timeout", 2*time.Second, "bound on the whole hook run")
	fs.BoolVar(&in.NoHerdr, "no-herdr", false, "do not report the pane's state to herdr (pane.report_agent)")
	fs.StringVar(&in.Finish, "finish", "", "finish a Stop hook detached: the payload file a hook left (internal)")
	fs.BoolVar(&in.UsageOnly, "usage-only", false, "with --finish: append only the turn's usage, its reply already appended (internal)")
	fs.BoolVar(&in.AfterPrompt, "after-prompt", false, "the agent ran this prompt's user-prompt-submit hook without waiting for it: append after it is done (the settings' Stop, StopFailure and Notification)")
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		fs.Usage()
		return in, false
	}
	in.Event = args[0]
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		if err == nil {
			fmt.Fprintf(os.Stderr, "fleetd-hook: unexpected arguments %q\n", fs.Args())
		}
		return in, false
	}
	return in, true
}
