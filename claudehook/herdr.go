package claudehook

import (
	"bufio"
	"context"
	"encoding/json"
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
