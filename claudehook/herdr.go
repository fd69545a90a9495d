package claudehook

import (
	"context"
	"errors"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// HerdrSource is the pane.report_agent source of fleetd's hooks in a
// Claude Code pane ("fleetd:<kind>" in another kind's); herdr treats a
// source outside herdr: as the hook authority for the pane.
const HerdrSource = "fleetd:claude"

// herdrState is the pane state a hook reports to herdr, or "" for none.
func herdrState(h Hook, p Payload) string {
	switch h {
	case SessionStart, Stop, StopFailure:
		return "idle"
	case UserPromptSubmit:
		return "working"
	case Notification:
		if blocking(p) {
			return "blocked"
		}
	}
	return ""
}

// reportHerdrRetry reports state until herdr answers or ctx ends, each
// attempt with twice the time of the one before. A lost report is costly:
// herdr keeps a hook authority's state over the screen until the next
// report, so a lost "idle" after a turn pins the pane as working and
// nothing is typed into it again. On a loaded host herdr can take longer
// than one short timeout to answer; a herdr that is not there at all
// fails at once and is not retried.
func reportHerdrRetry(ctx context.Context, socket, pane, kind, state string, timeout time.Duration, now func() time.Time) error {
	for {
		err := reportHerdr(ctx, socket, pane, kind, state, timeout, now)
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err // done, or herdr is not there at all
		}
		timeout *= 2
	}
}

// reportHerdr sends one pane.report_agent request. seq is the wall clock
// in nanoseconds: monotonic across hook processes, which is what herdr's
// per-source seq check needs.
func reportHerdr(ctx context.Context, socket, pane, kind, state string, timeout time.Duration, now func() time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	source := HerdrSource
	if kind != "claude" {
		source = "fleetd:" + kind
	}
	return herdrapi.New(socket).ReportAgent(ctx, herdrapi.ReportAgentRequest{
		PaneID: pane, Source: source, Agent: kind, State: herdrapi.AgentStatus(state), Seq: uint64(now().UnixNano()),
	})
}
