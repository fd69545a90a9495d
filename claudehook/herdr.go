package claudehook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// HerdrSource is the pane.report_agent source of fleetd's hooks; herdr
// treats a source outside herdr: as the hook authority for the pane.
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
func reportHerdrRetry(ctx context.Context, socket, pane, state string, timeout time.Duration, now func() time.Time) error {
	for {
		err := reportHerdr(ctx, socket, pane, state, timeout, now)
		var ne net.Error
		slow := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		if !slow || ctx.Err() != nil {
			return err // done, or herdr is not there at all
		}
		timeout *= 2
	}
}

// reportHerdr sends one pane.report_agent request over herdr's socket and
// reads its one-line answer (one request per connection, as herdr wants).
// seq is the wall clock in nanoseconds: monotonic across hook processes,
// which is what herdr's per-source seq check needs.
func reportHerdr(ctx context.Context, socket, pane, state string, timeout time.Duration, now func() time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	t := now()
	req := map[string]any{
		"id":     "fleetd-hook-" + strconv.FormatInt(t.UnixNano(), 36),
		"method": "pane.report_agent",
		"params": map[string]any{
			"pane_id": pane, "source": HerdrSource, "agent": "claude", "state": state,
			"seq": uint64(t.UnixNano()),
		},
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	var resp struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	if resp.Error != nil {
		return fmt.Errorf("herdr: %s: %s", resp.Error.Code, resp.Error.Message)
	}
	return nil
}
