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

// pullWait is how long one pull request for a role's head waits at the
// consumer's leader. Short, because a request lives only on the leader
// that took it: when that server dies the request dies with it, and the
// router learns so only when the request expires; and a request a dead
// router left behind may be handed the head, into the void, until then.
const pullWait = time.Second

// callWait bounds each request a router makes of JetStream while it holds
// a head: one sent to a leader that has just died is never answered, and
// asked again it reaches the new leader as soon as there is one.
const callWait = time.Second

// retryPause is the wait before a step that failed is tried again in place
// (the head kept, no restart with backoff): while the cluster fails over,
// a step fails until a leader is elected, and then must go on at once.
const retryPause = 100 * time.Millisecond

func (r *Router) consume(ctx context.Context, role string) error {
	cfg, err := ConsumerConfig(role, r.cfg.AckWait)
	if err != nil {
		return err
	}
	subject := cfg.FilterSubject
	cctx, cancel := context.WithTimeout(ctx, 2*callWait)
	cons, err := r.cfg.JS.CreateOrUpdateConsumer(cctx, events.Stream, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("consumer %s: %w", ConsumerName(role), err)
	}
	// One short pull at a time (Fetch), not a long-lived subscription
	// (Messages): a subscription whose consumer leader died notices only
	// by missed heartbeats, then is made again — the cluster test saw
	// role dispatch stand still 14 s that way. A pull that goes
	// unanswered is simply sent again, and reaches the new leader.
	for ctx.Err() == nil {
		// The deadline sets the request's expiry (FetchMaxWait and
		// FetchContext do not go together).
		fctx, cancel := context.WithTimeout(ctx, pullWait)
		batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
		if err == nil {
			for msg := range batch.Messages() {
				if err := r.handle(ctx, role, msg); err != nil {
					// Hand the turn back at once: another router (or
					// this one, after a restart) takes it from the head
					// of the queue.
					_ = msg.Nak()
					cancel()
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
			}
			err = batch.Error()
		}
		cancel()
		switch {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("next on %s: %w", subject, err)
		default:
			// No leader yet, or a request lost with one: ask again.
			sleepCtx(ctx, retryPause)
		}
	}
	return nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
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
	// A step that fails is tried again here, the head kept alive: the
	// failures that come are those of a fail-over (a request unanswered
	// while a leader is elected), and a restart of the worker would add
	// its backoff, and the ack wait of a head handed back, to the wait.
	retry := func(what string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Debug("router: "+what+" failed; trying again", "err", err)
		sleepCtx(ctx, retryPause)
		return ctx.Err()
	}
	for {
		seen, err := r.catchUp(ctx, ev.Seq)
		if err != nil {
			if err := retry("catching up", err); err != nil {
				return err
			}
			continue
		}
		t, known, err := r.cfg.Views.Turn(ctx, turn)
		if err != nil {
			return fmt.Errorf("turn %s: %w", turn, err)
		}
		if known && (t.Agent != "" || t.State != lifecycle.StateQueued) {
			log.Debug("router: turn already assigned or final", "agent", t.Agent, "state", t.State)
			return r.ack(ctx, msg)
		}
		if agent, ok := r.choose(role); ok {
			err := r.assign(ctx, ev, agent.Agent, seen)
			if errors.Is(err, errStale) || errors.Is(err, events.ErrConcurrency) {
				continue
			}
			if err != nil {
				if err := retry("assigning", err); err != nil {
					return err
				}
				continue
			}
			log.Debug("router: assigned", "agent", agent.Agent)
			return r.ack(ctx, msg)
		}
		if err := r.awaitChange(ctx); err != nil {
			return err
		}
	}
}

// ack acks the held head, asking again while it goes unanswered: an ack
// sent to a consumer leader that just died is lost, and the head — still
// pending at the new leader — would hold the role's queue for a whole ack
// wait before it is handed out again. It gives up after an ack wait, when
// the server hands the head to another router anyway (which finds it
// assigned and acks it).
func (r *Router) ack(ctx context.Context, msg jetstream.Msg) error {
	deadline := time.Now().Add(r.cfg.AckWait)
	for {
		actx, cancel := context.WithTimeout(ctx, callWait)
		err := msg.DoubleAck(actx)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return nil
		}
		sleepCtx(ctx, retryPause)
	}
}

// catchUp waits until the views hold the whole stream as it is now (and
// at least seq), and returns that stream sequence.
func (r *Router) catchUp(ctx context.Context, seq uint64) (uint64, error) {
	last, err := r.lastSeq(ctx, events.SubjectAll)
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

// queuedAll is every agent's queued events (turns.QueuedAll): nothing
// else adds to an agent's turns, so nothing else can raise a role's count
// against its cap.
const queuedAll = turns.QueuedAll

// assign appends the turn's assignment to agent (turns.Assignment), as
// decided on the views read at seen, and only if the decision still holds
// when the log stores it:
//   - the agent has no event after seen (a check just before the append),
//     so an agent that changed is re-read instead of double-booked;
//   - the append is guarded by the last queued event of any agent
//     (queuedAll) as of seen, so no turn was put on any agent in between.
//     That is what makes the cap exact in the log's order: the count
//     against it was read at seen, and one role's head is decided by one
//     router at a time only while the consumer's leader keeps its
//     pending head — across a fail-over (a lost ack, an expired ack wait,
//     a new leader) a second router can decide the next head while the
//     first still appends, and then one of the two appends is refused
//     and decided again on fresh views.
//
// Each request is bounded by callWait (see there); a retried append of
// the same assignment is stored once (its id is derived from the turn's).
func (r *Router) assign(ctx context.Context, ev events.Event, agent string, seen uint64) error {
	filter, err := events.AgentAll(agent)
	if err != nil {
		return err
	}
	last, err := r.lastSeq(ctx, filter)
	if err != nil {
		return fmt.Errorf("agent %s position: %w", agent, err)
	}
	queued, err := r.lastSeq(ctx, queuedAll)
	if err != nil {
		return fmt.Errorf("position of the agents' queues: %w", err)
	}
	if last > seen || queued > seen {
		return errStale
	}
	a, err := turns.Assignment(ev, agent)
	if err != nil {
		return err
	}
	a.Source, a.Time = r.source, r.cfg.Now()
	turn := a.CorrelationID
	actx, cancel := context.WithTimeout(ctx, callWait)
	ack, err := r.cfg.Log.Append(actx, a, events.ExpectLastSeqFor(queued, queuedAll))
	cancel()
	if err != nil {
		return fmt.Errorf("assign turn %s to %s: %w", turn, agent, err)
	}
	// Read-your-writes for the next decision on this role.
	if err := r.cfg.Views.WaitSeq(ctx, ack.Seq); err != nil {
		return fmt.Errorf("wait for views at #%d: %w", ack.Seq, err)
	}
	return nil
}

// lastSeq is Log.LastSeq bounded by callWait.
func (r *Router) lastSeq(ctx context.Context, filter string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, callWait)
	defer cancel()
	return r.cfg.Log.LastSeq(ctx, filter)
}
