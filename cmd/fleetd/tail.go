package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/clitable"
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
	nc, js, err := dialNATS(g, "fleetd tail")
	if err != nil {
		return err
	}
	defer nc.Close()
	log := events.New(js, events.Options{OnSkip: func(subject string, seq uint64, err error) {
		fmt.Fprintf(os.Stderr, "skipped #%d on %s: %v\n", seq, subject, err)
	}})
	out := os.Stdout
	if !c.Follow {
		for ev, err := range log.Read(ctx, q) {
			if err != nil {
				return err
			}
			if err := clitable.Event(out, ev, c.JSON); err != nil {
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
		if err := clitable.Event(out, ev, c.JSON); err != nil {
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
	q.New = c.Since == "" && c.Follow
	if err := q.StartAt(c.Since, time.Now()); err != nil {
		return q, fmt.Errorf("--since %w", err)
	}
	return q, nil
}

// dialNATS connects a client command to a running fleetd.
func dialNATS(g *Globals, name string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := natsauth.Connect(g.NATS, name, g.Creds, g.natsToken(), extra...)
	return nc, js, natsHint(err)
}

// natsHint says what to check when no NATS answered.
func natsHint(err error) error {
	if errors.Is(err, natsauth.ErrNoServer) {
		return fmt.Errorf("%w (is 'fleetd up' running? set --nats or FLEET_NATS_URL)", err)
	}
	return err
}
