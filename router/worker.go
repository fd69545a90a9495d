package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/restart"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// ConsumerName is the durable consumer that holds role's queue; every
// router instance of the fleet shares it.
func ConsumerName(role string) string { return "router-" + role }

// work runs one role's dispatch loop until ctx ends, re-creating its
// consumer after errors.
func (r *Router) work(ctx context.Context, role string) {
	log := r.cfg.Logger.With("role", role)
	restart.Loop(ctx, func(ctx context.Context) error { return r.consume(ctx, role) }, func(err error, wait time.Duration) {
		log.Warn("router: role worker restarts", "err", err, "backoff", wait)
	})
}

// ConsumerConfig is the durable consumer of role's queue (on the FLEET
// stream) that every router of the fleet shares, holding a message for
// ackWait (Config.AckWait; 0 for its default). Provisioning creates it
// ahead with the same configuration.
func ConsumerConfig(role string, ackWait time.Duration) (jetstream.ConsumerConfig, error) {
	subject, err := events.RoleSubject(role, "queued")
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	if ackWait == 0 {
		ackWait = DefaultAckWait
	}
	return jetstream.ConsumerConfig{
		Durable:       ConsumerName(role),
		Description:   "fleetd router: assigns turns queued for role " + role,
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		// One head of queue held fleet-wide: strict FIFO, one decider.
		MaxAckPending: 1,
	}, nil
}

func (r *Router) consume(ctx context.Context, role string) error {
	cfg, err := ConsumerConfig(role, r.cfg.AckWait)
	if err != nil {
		return err
	}
	subject := cfg.FilterSubject
	cons, err := r.cfg.JS.CreateOrUpdateConsumer(ctx, events.Stream, cfg)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", ConsumerName(role), err)
	}
	// Pull requests expire as soon as a held head of queue would: a
	// router that dies leaves a pull request behind on the consumer's
	// leader, and until it expires (nats.go's default is 30 s) the server
	// may hand the redelivered head to it, into the void — the cluster
	// kill test saw the role queue stand still ~30 s that way.
	it, err := cons.Messages(jetstream.PullMaxMessages(1), jetstream.PullExpiry(max(r.cfg.AckWait, time.Second)))
	if err != nil {
		return fmt.Errorf("consume %s: %w", subject, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("next on %s: %w", subject, err)
		}
		if err := r.handle(ctx, role, msg); err != nil {
			// Hand the turn back at once: another router (or this one,
			// after a restart) takes it from the head of the queue.
			_ = msg.Nak()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// handle assigns one role turn, waiting as long as it takes for a ready
// agent within the cap. It acks the message once the turn is assigned (or
// found assigned or final already).
func (r *Router) handle(ctx context.Context, role string, msg jetstream.Msg) error {
	md, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	ev, err := r.reg.Decode(msg.Subject(), msg.Data())
	if err != nil {
		// The log's readers (the projection at least) skip and report the
		// same message once; a second warning here would only repeat it.
		r.cfg.Logger.Debug("router: skip a malformed role message", "subject", msg.Subject(), "seq", md.Sequence.Stream, "err", err)
		return msg.Term()
	}
	ev.Seq = md.Sequence.Stream
	if _, ok := ev.Data.(events.RoleQueued); !ok {
		return msg.Term()
	}
	stop := r.keepAlive(msg)
	defer stop()

	turn := lifecycle.TurnID(ev)
	log := r.cfg.Logger.With("role", role, "turn", turn)
	for {
		seen, err := r.catchUp(ctx, ev.Seq)
		if err != nil {
			return err
		}
		t, known, err := r.cfg.Views.Turn(ctx, turn)
		if err != nil {
			return fmt.Errorf("turn %s: %w", turn, err)
		}
		if known && (t.Agent != "" || t.State != lifecycle.StateQueued) {
			log.Debug("router: turn already assigned or final", "agent", t.Agent, "state", t.State)
			return msg.DoubleAck(ctx)
		}
		if agent, ok := r.choose(role); ok {
			err := r.assign(ctx, ev, agent.Agent, seen)
			if errors.Is(err, errStale) || errors.Is(err, events.ErrConcurrency) {
				continue
			}
			if err != nil {
				return err
			}
			log.Debug("router: assigned", "agent", agent.Agent)
			return msg.DoubleAck(ctx)
		}
		if err := r.awaitChange(ctx); err != nil {
			return err
		}
	}
}

// catchUp waits until the views hold the whole stream as it is now (and
// at least seq), and returns that stream sequence.
func (r *Router) catchUp(ctx context.Context, seq uint64) (uint64, error) {
	last, err := r.cfg.Log.LastSeq(ctx, events.SubjectAll)
	if err != nil {
		return 0, fmt.Errorf("stream position: %w", err)
	}
	last = max(last, seq)
	if err := r.cfg.Views.WaitSeq(ctx, last); err != nil {
		return 0, fmt.Errorf("wait for views at #%d: %w", last, err)
	}
	return last, nil
}

// awaitChange returns when the views applied something new, or after Poll.
func (r *Router) awaitChange(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, r.cfg.Poll)
	defer cancel()
	_ = r.cfg.Views.WaitSeq(wctx, r.cfg.Views.Applied()+1)
	return ctx.Err()
}

// keepAlive tells the server the held message is still being worked on,
// until the returned stop is called.
func (r *Router) keepAlive(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// choose picks the agent of role that has been idle longest among the
// ready ones within budget, or none when none is, the role is at its cap
// or out of budget. The
// cap counts every turn on the role's agents that is not final: queued
// on an agent, typed or submitted.
func (r *Router) choose(role string) (projections.Agent, bool) {
	agents := projections.OfRole(r.cfg.Views.Roster(), role)
	if limit := r.cfg.Roles.Roles[role].Cap; limit > 0 && lo.SumBy(agents, (*projections.Agent).Open) >= limit {
		return projections.Agent{}, false
	}
	budgets := r.cfg.Budgets
	if budgets != nil && budgets.Role(role).Exhausted() {
		return projections.Agent{}, false
	}
	ready := lo.Filter(agents, func(a *projections.Agent, _ int) bool {
		return a.Ready() && (budgets == nil || !budgets.Agent(*a).Exhausted())
	})
	if len(ready) == 0 {
		return projections.Agent{}, false
	}
	// Idle longest = last heard of longest ago; ties by id.
	best := slices.MinFunc(ready, func(a, b *projections.Agent) int {
		return cmp.Or(a.LastSeen.Compare(b.LastSeen), cmp.Compare(a.Agent, b.Agent))
	})
	return *best, true
}

// assign appends the turn's assignment to agent (turns.Assignment),
// guarded by the agent's last sequence as of seen (the stream position the
// views were read at).
func (r *Router) assign(ctx context.Context, ev events.Event, agent string, seen uint64) error {
	filter, err := events.AgentAll(agent)
	if err != nil {
		return err
	}
	last, err := r.cfg.Log.LastSeq(ctx, filter)
	if err != nil {
		return fmt.Errorf("agent %s position: %w", agent, err)
	}
	if last > seen {
		return errStale
	}
	a, err := turns.Assignment(ev, agent)
	if err != nil {
		return err
	}
	a.Source, a.Time = r.source, r.cfg.Now()
	turn := a.CorrelationID
	ack, err := r.cfg.Log.Append(ctx, a, events.ExpectLastSeqFor(last, filter))
	if err != nil {
		return fmt.Errorf("assign turn %s to %s: %w", turn, agent, err)
	}
	// Read-your-writes for the next decision on this role.
	if err := r.cfg.Views.WaitSeq(ctx, ack.Seq); err != nil {
		return fmt.Errorf("wait for views at #%d: %w", ack.Seq, err)
	}
	return nil
}
