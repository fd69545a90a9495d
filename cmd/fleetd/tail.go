package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
)

// TailCmd prints the event log.
type TailCmd struct {
	Since   string   `help:"Start here: a duration ago (10m), a time (RFC 3339), a stream sequence (#42), or 'all'. Default: only new events." placeholder:"WHEN"`
	Subject []string `help:"Only events on these subjects (wildcards allowed), e.g. 'fleet.agent.w-1.>'." placeholder:"SUBJECT"`
	Agent   string   `help:"Only one agent's events (shorthand for --subject fleet.agent.<id>.>)."`
	JSON    bool     `name:"json" help:"Print each event as its CloudEvents JSON, one per line."`
	Follow  bool     `help:"Keep printing new events (--no-follow prints what is there and exits)." default:"true" negatable:""`
}

// Run connects to a running fleetd over NATS and prints events.
func (c *TailCmd) Run(ctx context.Context, g *Globals) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	nc, err := dialNATS(g, "fleetd tail")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	log := events.New(js, events.Options{OnSkip: func(subject string, seq uint64, err error) {
		fmt.Fprintf(os.Stderr, "skipped #%d on %s: %v\n", seq, subject, err)
	}})
	out := os.Stdout
	if !c.Follow {
		for ev, err := range log.Read(ctx, q) {
			if err != nil {
				return err
			}
			if err := c.print(out, ev); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := log.Follow(ctx, q)
	if err != nil {
		return err
	}
	defer f.Stop()
	for ev := range f.Events() {
		if err := c.print(out, ev); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return f.Err()
}

func (c *TailCmd) query() (events.Query, error) {
	q := events.Query{Subjects: c.Subject}
	if c.Agent != "" {
		s, err := events.AgentAll(c.Agent)
		if err != nil {
			return q, err
		}
		q.Subjects = append(q.Subjects, s)
	}
	switch s := c.Since; {
	case s == "":
		q.New = c.Follow
	case s == "all":
	case strings.HasPrefix(s, "#"):
		seq, err := strconv.ParseUint(s[1:], 10, 64)
		if err != nil || seq == 0 {
			return q, fmt.Errorf("--since %q: want #<sequence>", s)
		}
		q.FromSeq = seq
	default:
		if d, err := time.ParseDuration(s); err == nil {
			q.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			q.Since = t
		} else {
			return q, fmt.Errorf("--since %q: want a duration (10m), a time (RFC 3339), #<seq> or all", s)
		}
	}
	return q, nil
}

func (c *TailCmd) print(w io.Writer, ev events.Event) error {
	if c.JSON {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(w, Describe(ev))
	return err
}

// Describe renders an event as one readable line.
func Describe(ev events.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%-6d %-8s %-14s %-10s", ev.Time.Local().Format("15:04:05.000"), ev.Seq, ev.Type().Category(), ev.Subject, ev.Type().Kind())
	turn := ""
	if ev.CorrelationID != "" {
		turn = " turn=" + ev.CorrelationID
	}
	switch d := ev.Data.(type) {
	case events.AgentRegistered:
		fmt.Fprintf(&b, " host=%s pane=%s role=%s tier=%d model=%s", d.Host, d.Pane, d.Role, d.Tier, d.Model)
	case events.AgentStatusChanged:
		fmt.Fprintf(&b, " %s (from %s)", d.Status, d.Source)
		if d.Violation != "" {
			fmt.Fprintf(&b, " BOUNDARY: %s", d.Violation)
		}
	case events.AgentQueued:
		fmt.Fprintf(&b, "%s from=%s %q", turn, d.From, clip(d.Text, 60))
	case events.AgentTyped:
		fmt.Fprintf(&b, "%s pane=%s via %s", turn, d.Pane, d.Method)
	case events.AgentSubmitted:
		fmt.Fprintf(&b, "%s via %s prompt_id=%s", turn, d.Via, d.PromptID)
	case events.AgentReplied:
		fmt.Fprintf(&b, "%s %q tokens=%d/%d", turn, clip(d.Reply, 60), d.Tokens.In, d.Tokens.Out)
	case events.AgentFailed:
		fmt.Fprintf(&b, "%s %s: %s", turn, d.Reason, d.Message)
	case events.AgentSession:
		fmt.Fprintf(&b, " %s session=%s %s", d.State, d.SessionID, d.Source)
	case events.AgentExited:
		fmt.Fprintf(&b, " pane=%s %s", d.Pane, d.Reason)
	case events.RoleQueued:
		fmt.Fprintf(&b, "%s from=%s %q", turn, d.From, clip(d.Text, 60))
	case events.HostUp:
		if d.Heartbeat {
			b.WriteString(" heartbeat")
		} else {
			fmt.Fprintf(&b, " version=%s nats=%s pid=%d", d.Version, d.NATSURL, d.PID)
		}
	case events.HostDown:
		fmt.Fprintf(&b, " %s", d.Reason)
	case events.HostHerdr:
		fmt.Fprintf(&b, " connected=%t %s %s", d.Connected, d.Socket, d.Error)
	case events.JobCreated:
		fmt.Fprintf(&b, " %q tasks=%d", clip(d.Goal, 60), len(d.Tasks))
	case events.JobContext:
		fmt.Fprintf(&b, " key=%s tags=%v %dB", d.Key, d.Tags, d.Size)
	case events.JobSliced:
		fmt.Fprintf(&b, " task=%s items=%v %d/%dB", d.Task, d.Items, d.Bytes, d.Budget)
	case events.JobTask:
		fmt.Fprintf(&b, " task=%s %s agent=%s", d.Task, d.State, d.Agent)
	case events.JobDone:
		fmt.Fprintf(&b, " %s %s", d.Status, d.Error)
	}
	return b.String()
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// dialNATS connects a client command to a running fleetd.
func dialNATS(g *Globals, name string, extra ...nats.Option) (*nats.Conn, error) {
	url := g.NATS
	if url == "" {
		url = nats.DefaultURL
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(3 * time.Second)}
	auth, err := natsauth.ClientOptions(g.Creds, g.natsToken())
	if err != nil {
		return nil, err
	}
	opts = append(append(opts, auth...), extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to fleetd's NATS at %s: %w (is 'fleetd up' running? set --nats or FLEET_NATS_URL)", url, err)
	}
	return nc, nil
}
