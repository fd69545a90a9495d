package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/restart"
	"github.com/fleetd/fleetd/lifecycle"
)

// NotifyConsumer is the durable consumer the notifiers of a fleet share:
// every turn's end, each handled by one of them and acknowledged once its
// notification is stored.
const NotifyConsumer = "inbox-notify"

// Turns is what the notifier needs of the read models: a turn by id, once
// they have folded the event that ended it. projections.Views has it.
type Turns interface {
	Turn(ctx context.Context, id string) (lifecycle.Turn, bool, error)
	WaitSeq(ctx context.Context, seq uint64) error
}

// Notifier posts the end of every turn sent with notify to its sender's
// inbox. It reads turn ends through a durable consumer, so an end that
// happened while no fleetd ran is reported when one runs again.
type Notifier struct {
	Inboxes *Inboxes
	JS      jetstream.JetStream
	Turns   Turns
	Logger  *slog.Logger
}

// NotificationID is the id of the message reporting turn's end: derived
// from the turn id, so a retry (or a second notifier) writes the same id
// and JetStream's dedupe stores it once.
func NotificationID(turn string) string {
	return events.DerivedIDFrom(turn, "fleetd/inbox/notify/"+turn)
}

// Run reports turn ends until ctx ends, starting again after errors (a
// lost stream, NATS away): it never fails the process.
func (n *Notifier) Run(ctx context.Context) error {
	logger := n.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	restart.Loop(ctx, n.consume, func(err error, wait time.Duration) {
		logger.Warn("inbox notifier restarts", "err", err, "backoff", wait)
	})
	return nil
}

func (n *Notifier) consume(ctx context.Context) error {
	cons, err := n.JS.CreateOrUpdateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{
		Durable:        NotifyConsumer,
		Description:    "fleetd: reports the end of turns sent with notify to their sender's inbox",
		FilterSubjects: []string{"fleet.agent.*.replied", "fleet.agent.*.failed"},
		// Turns that ended before any notifier ran were sent before
		// notify existed: nothing to report.
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", NotifyConsumer, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("consume turn ends: %w", err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return err
		}
		if err := n.handle(ctx, msg); err != nil {
			// Not acknowledged: handed out again after the ack wait.
			_ = msg.Nak()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		_ = msg.Ack()
	}
}

// handle reports the turn msg ended, if it was sent with notify.
func (n *Notifier) handle(ctx context.Context, msg jetstream.Msg) error {
	ev, err := n.Inboxes.cfg.Registry.Decode(msg.Subject(), msg.Data())
	if err != nil {
		return nil // junk: nothing to report, never again
	}
	id := lifecycle.TurnID(ev)
	if meta, err := msg.Metadata(); err == nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = n.Turns.WaitSeq(wctx, meta.Sequence.Stream)
		cancel()
		if err != nil {
			return fmt.Errorf("views at #%d: %w", meta.Sequence.Stream, err)
		}
	}
	t, ok, err := n.Turns.Turn(ctx, id)
	if err != nil {
		return fmt.Errorf("turn %s: %w", id, err)
	}
	if !ok || !t.Notify || !t.State.Final() || events.ValidAgentID(t.From) != nil {
		return nil
	}
	text := t.Reply
	if t.State == lifecycle.StateFailed {
		text = "failed: " + t.Reason
		if t.Message != "" {
			text += ": " + t.Message
		}
	}
	if text == "" {
		text = "(" + string(t.State) + ", no reply text)"
	}
	from := t.Agent
	if from == "" {
		from = "fleetd"
	}
	_, err = n.Inboxes.Post(ctx, Message{ID: NotificationID(t.ID), To: t.From, From: from, Text: text, Turn: t.ID, Status: string(t.State)})
	return err
}
