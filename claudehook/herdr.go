package claudehook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetd/fleetd/internal/sockdial"
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
func reportHerdrRetry(ctx context.Context, socket, pane, kind, state string, timeout time.Duration, seq uint64) error {
	for {
		// Each try with the same seq: a retry must not outrank a later
		// hook's report.
		err := reportHerdr(ctx, socket, pane, kind, state, timeout, seq)
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err // done, or herdr is not there at all
		}
		timeout *= 2
	}
}

// reportHerdr sends one pane.report_agent request. seq is the wall clock
// in nanoseconds when the hook's turn to report came (Run): monotonic
// across hook processes, which is what herdr's per-source seq check needs.
//
// It speaks herdr's line protocol itself rather than through herdrapi's
// client: that client is built on package net, which would link the cgo
// resolver into the hook binary and make every exec pay the dynamic loader
// (see internal/sockdial). TestHerdrReportIsHerdrapis pins the request
// line to herdrapi's.
func reportHerdr(ctx context.Context, socket, pane, kind, state string, timeout time.Duration, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	source := HerdrSource
	if kind != "claude" {
		source = "fleetd:" + kind
	}
	line, err := json.Marshal(herdrRequest{ID: herdrRequestID, Method: "pane.report_agent", Params: herdrReport{
		PaneID: pane, Source: source, Agent: kind, State: state, Seq: seq,
	}})
	if err != nil {
		return err
	}
	conn, err := sockdial.Dial(ctx, "unix", socket)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("herdr pane.report_agent: %w", ctx.Err())
		}
		return fmt.Errorf("herdr pane.report_agent: dial %s: %w", socket, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	answer, err := func() ([]byte, error) {
		if _, err := conn.Write(append(line, '\n')); err != nil {
			return nil, err
		}
		// One line answers one request; a report's answer is small.
		return bufio.NewReaderSize(io.LimitReader(conn, 64<<10), 4096).ReadBytes('\n')
	}()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("herdr pane.report_agent: %w", ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The socket's deadline is ctx's; its timer can fire a moment
		// before the context's own.
		return fmt.Errorf("herdr pane.report_agent: %w", context.DeadlineExceeded)
	case err != nil && len(answer) == 0:
		return fmt.Errorf("herdr pane.report_agent: %w", err)
	}
	var r struct {
		ID     *string `json:"id"`
		Result *struct {
			Type string `json:"type"`
		} `json:"result"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(answer, &r); {
	case err != nil:
		return fmt.Errorf("herdr pane.report_agent: a bad response: %w", err)
	case r.Error != nil:
		return fmt.Errorf("herdr pane.report_agent: %s: %s", r.Error.Code, r.Error.Message)
	case r.ID == nil || *r.ID != herdrRequestID:
		return fmt.Errorf("herdr pane.report_agent: a bad response: id %v, want %q", r.ID, herdrRequestID)
	case r.Result == nil || r.Result.Type != "ok":
		return fmt.Errorf("herdr pane.report_agent: a bad response: %s", bytes.TrimSpace(answer))
	}
	return nil
}

// herdrRequestID is the id of a hook's one request on its connection.
const herdrRequestID = "fleetd-hook-1"

// herdrRequest and herdrReport are herdr's request line and the params of
// pane.report_agent (herdrapi.ReportAgentRequest's fields, as the hook
// fills them).
type herdrRequest struct {
	ID     string      `json:"id"`
	Method string      `json:"method"`
	Params herdrReport `json:"params"`
}

type herdrReport struct {
	PaneID string `json:"pane_id"`
	Source string `json:"source"`
	Agent  string `json:"agent"`
	State  string `json:"state"`
	Seq    uint64 `json:"seq,omitempty"`
}
