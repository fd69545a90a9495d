package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
)

// Kind is the subject token of inbox messages: fleet.agent.<agent>.inbox.
var Kind = events.TypeAgentInbox.Kind()

// Subject is the subject agent's messages are stored on.
func Subject(agent string) (string, error) { return events.AgentSubject(agent, Kind) }

// ReadKind is the subject token of an inbox's acknowledged-through
// records (events.AgentInboxRead): fleet.agent.<agent>.inbox_read.
var ReadKind = events.TypeAgentInboxRead.Kind()

// DefaultInactiveThreshold is how long an inbox consumer may go without a
// reader before nats-server deletes it.
const DefaultInactiveThreshold = 7 * 24 * time.Hour

// ConsumerName is the durable consumer agent reads its inbox through.
func ConsumerName(agent string) string { return "inbox-" + agent }

// Message is one inbox message as its reader sees it.
type Message struct {
	ID   string `json:"id"`
	To   string `json:"to"`
	From string `json:"from"`
	Text string `json:"text"`
	// ReplyTo is the id of the message this one answers.
	ReplyTo string `json:"reply_to,omitempty"`
	// Turn and Status: the turn sent with notify whose end this reports.
	Turn   string    `json:"turn,omitempty"`
	Status string    `json:"status,omitempty"`
	Time   time.Time `json:"time"`
	// Seq is the message's stream sequence.
	Seq uint64 `json:"seq,omitempty"`
	// Deliveries counts how often it was handed out: above 1, it was
	// pulled before and not acknowledged.
	Deliveries uint64 `json:"deliveries,omitempty"`
}

// Config is what the inboxes run with.
type Config struct {
	Log events.Log
	JS  jetstream.JetStream
	// Source is the CloudEvents source of posted messages.
	Source string
	// AckWait is how long a pulled message stays with its reader before
	// it is handed out again. Default 10m: long enough for a model to
	// handle it and reply.
	AckWait time.Duration
	// MaxAckPending bounds the messages one reader holds unacknowledged
	// (and what this process remembers to acknowledge them). Default 256.
	MaxAckPending int
	// InactiveThreshold is how long an inbox consumer may go without a
	// pull before nats-server deletes it (counted from when the last
	// message handed out passed its ack wait), so inboxes opened once and
	// abandoned do not hold FLEET's consumer slots for ever. Nothing is
	// lost: the messages are in the log, and Open makes the consumer
	// again from after the acknowledged-through record. Default
	// DefaultInactiveThreshold.
	InactiveThreshold time.Duration
	// Registry decodes messages; default events.NewRegistry().
	Registry *events.Registry
	Now      func() time.Time
}

func (c *Config) setDefaults() {
	if c.AckWait == 0 {
		c.AckWait = 10 * time.Minute
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 256
	}
	if c.InactiveThreshold == 0 {
		c.InactiveThreshold = DefaultInactiveThreshold
	}
	if c.Registry == nil {
		c.Registry = events.NewRegistry()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Source == "" {
		c.Source = "fleetd/inbox"
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, fmt.Errorf("%w: no Log", ErrConfig))
	}
	if c.JS == nil {
		errs = append(errs, fmt.Errorf("%w: no JetStream", ErrConfig))
	}
	if c.AckWait < 0 || c.MaxAckPending < 0 || c.InactiveThreshold < 0 {
		errs = append(errs, fmt.Errorf("%w: negative AckWait, MaxAckPending or InactiveThreshold", ErrConfig))
	}
	return errors.Join(errs...)
}

// Inboxes posts to, pulls from and acknowledges the messages of every
// agent's inbox. It is safe for concurrent use.
type Inboxes struct {
	cfg Config

	mu sync.Mutex
	// held are the messages handed out and not yet acknowledged, by agent
	// and message id: what Ack acknowledges. A restart forgets them; the
	// server hands them out again after AckWait.
	held map[string]map[string]jetstream.Msg
	// read is, by agent, the last acknowledged-through record written
	// here (or, once loaded, read from the log), so an Ack that does not
	// move the ack floor writes none.
	read map[string]uint64
	// readLoaded says read[agent] holds the log's record too: a pull
	// never hands out what that record says was acknowledged.
	readLoaded map[string]bool
}

// New returns the inboxes over cfg. It does no I/O.
func New(cfg Config) (*Inboxes, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Inboxes{cfg: cfg, held: map[string]map[string]jetstream.Msg{}, read: map[string]uint64{}, readLoaded: map[string]bool{}}, nil
}

// Post appends m to m.To's inbox and returns it with its id, time and
// sequence. A set ID is kept (and, as the Nats-Msg-Id, makes a retried
// post a no-op).
func (b *Inboxes) Post(ctx context.Context, m Message) (Message, error) {
	var errs []error
	if err := events.ValidAgentID(m.To); err != nil {
		errs = append(errs, fmt.Errorf("%w: to: %w", ErrBadMessage, err))
	}
	if err := events.ValidAgentID(m.From); err != nil {
		errs = append(errs, fmt.Errorf("%w: from: %w", ErrBadMessage, err))
	}
	if strings.TrimSpace(m.Text) == "" {
		errs = append(errs, fmt.Errorf("%w: empty text", ErrBadMessage))
	}
	if err := errors.Join(errs...); err != nil {
		return Message{}, err
	}
	ev := events.Event{ID: m.ID, Subject: m.To, Source: b.cfg.Source, CorrelationID: m.Turn, Time: b.cfg.Now(),
		Data: events.AgentInbox{From: m.From, Text: m.Text, ReplyTo: m.ReplyTo, Turn: m.Turn, Status: m.Status}}
	if m.ReplyTo != "" {
		ev.CausationID = m.ReplyTo
	}
	if err := b.cfg.Registry.Check(ev); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	ack, err := b.cfg.Log.Append(ctx, ev)
	if err != nil {
		return Message{}, fmt.Errorf("post to %s: %w", m.To, err)
	}
	m.ID, m.Time, m.Seq = ack.ID, ev.Time, ack.Seq
	return m, nil
}

// ConsumerConfig is agent's inbox consumer, starting at start (a stream
// sequence; 0: the first message), acknowledged one by one.
func (b *Inboxes) ConsumerConfig(agent string, start uint64) (jetstream.ConsumerConfig, error) {
	subject, err := Subject(agent)
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:           ConsumerName(agent),
		Description:       "fleetd inbox of " + agent,
		FilterSubject:     subject,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           b.cfg.AckWait,
		MaxAckPending:     b.cfg.MaxAckPending,
		InactiveThreshold: b.cfg.InactiveThreshold,
	}
	if start > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	return cfg, nil
}

// consumer is agent's inbox consumer as it is, or ErrNoInbox.
func (b *Inboxes) consumer(ctx context.Context, agent string) (jetstream.Consumer, error) {
	cons, err := b.cfg.JS.Consumer(ctx, events.Stream, ConsumerName(agent))
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("%w: %s", ErrNoInbox, agent)
	case err != nil:
		return nil, fmt.Errorf("inbox consumer of %s: %w", agent, err)
	}
	return cons, nil
}

// Open makes sure agent's inbox consumer exists: an agent that has opened
// its inbox is one messages may be posted to even when no pane of the
// fleet runs it (a lead outside fleetd). Who may open an inbox is the
// caller's to decide (the shim: an agent of the roster, or a caller with
// the bearer token); every consumer counts against FLEET's limit.
//
// A consumer made here (never opened, or reclaimed after
// InactiveThreshold) starts after the agent's last acknowledged-through
// record — DeliverByStartSequence at Through+1 — and at the first message
// without one (DeliverAll). Not DeliverNew: messages posted while no
// consumer existed are in the log and were never handed out. Not
// DeliverAll once a record exists: that would hand out again every
// message already acknowledged. Messages acknowledged above the floor
// (out of order), or by a reader that acknowledged on NATS directly after
// fleetd last wrote the record, are handed out once more: at least once,
// never lost.
//
// It opens a new inbox only while FLEET holds fewer than half the
// stream's consumer limit: the other half stays for fleetd's readers
// (ErrTooManyInboxes beyond).
func (b *Inboxes) Open(ctx context.Context, agent string) (jetstream.Consumer, error) {
	if err := events.ValidAgentID(agent); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	cons, err := b.consumer(ctx, agent)
	if err == nil {
		return b.upgrade(ctx, cons)
	}
	if !errors.Is(err, ErrNoInbox) {
		return nil, err
	}
	if err := b.roomForOne(ctx); err != nil {
		return nil, err
	}
	through, err := b.readThrough(ctx, agent)
	if err != nil {
		return nil, err
	}
	cfg, err := b.ConsumerConfig(agent, through+1)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	cons, err = b.cfg.JS.CreateConsumer(ctx, events.Stream, cfg)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		// Made meanwhile, by another host's shim: read from that one.
		return b.consumer(ctx, agent)
	}
	if err != nil {
		return nil, fmt.Errorf("inbox consumer %s: %w", cfg.Durable, err)
	}
	return cons, nil
}

// upgrade gives an inbox consumer made by an older fleetd (without an
// inactivity threshold, or with another) the configured one, keeping
// where it started: a deliver policy cannot change.
func (b *Inboxes) upgrade(ctx context.Context, cons jetstream.Consumer) (jetstream.Consumer, error) {
	info := cons.CachedInfo()
	if info == nil || info.Config.InactiveThreshold == b.cfg.InactiveThreshold {
		return cons, nil
	}
	cfg := info.Config
	cfg.InactiveThreshold = b.cfg.InactiveThreshold
	up, err := b.cfg.JS.UpdateConsumer(ctx, events.Stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("inbox consumer %s: %w", cfg.Durable, err)
	}
	return up, nil
}

// roomForOne refuses a new inbox while FLEET holds half its consumer
// limit or more (nats-server's default of 1,000 when the stream sets
// none).
func (b *Inboxes) roomForOne(ctx context.Context) error {
	s, err := b.cfg.JS.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("inbox: stream %s: %w", events.Stream, err)
	}
	info := s.CachedInfo()
	limit := info.Config.MaxConsumers
	if limit <= 0 {
		limit = 1000
	}
	if have := info.State.Consumers; have >= limit/2 {
		return fmt.Errorf("%w: %d of %d, and half are kept for fleetd's readers", ErrTooManyInboxes, have, limit)
	}
	return nil
}

// loadRead reads agent's acknowledged-through record from the log once.
func (b *Inboxes) loadRead(ctx context.Context, agent string) error {
	b.mu.Lock()
	loaded := b.readLoaded[agent]
	b.mu.Unlock()
	if loaded {
		return nil
	}
	through, err := b.readThrough(ctx, agent)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.read[agent] = max(b.read[agent], through)
	b.readLoaded[agent] = true
	b.mu.Unlock()
	return nil
}

// readThrough is the Through of agent's last acknowledged-through record,
// 0 when there is none.
func (b *Inboxes) readThrough(ctx context.Context, agent string) (uint64, error) {
	subject, err := events.AgentSubject(agent, ReadKind)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	seq, err := b.cfg.Log.LastSeq(ctx, subject)
	if err != nil || seq == 0 {
		return 0, err
	}
	for ev, err := range b.cfg.Log.Read(ctx, events.Query{Subjects: []string{subject}, FromSeq: seq}) {
		if err != nil {
			return 0, fmt.Errorf("inbox of %s: %w", agent, err)
		}
		if d, ok := ev.Data.(events.AgentInboxRead); ok {
			return d.Through, nil
		}
	}
	return 0, nil
}

// Known reports whether agent's inbox is open.
func (b *Inboxes) Known(ctx context.Context, agent string) (bool, error) {
	_, err := b.consumer(ctx, agent)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNoInbox):
		return false, nil
	}
	return false, err
}

// Unread is how many of agent's messages were never handed out (pulled
// but unacknowledged ones do not count: the agent has seen them). It
// opens the inbox: the nudger asks it for agents of the roster only.
func (b *Inboxes) Unread(ctx context.Context, agent string) (int, error) {
	cons, err := b.Open(ctx, agent)
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("inbox of %s: %w", agent, err)
	}
	return int(info.NumPending), nil
}

// Pull hands out up to max of agent's messages (default 10): at once
// those waiting, or, when none waits, the first to arrive within wait
// (0: none). Each stays agent's until acknowledged (Ack) or AckWait
// passes; then it is handed out again with Deliveries one higher. It
// opens nothing: an inbox not open is ErrNoInbox (Open it first). A pull
// with no wait was seen, on a loaded machine, to hand out nothing for
// messages stored a moment before, or just after its consumer was made or
// the server restarted: the next pull has them; nothing is lost.
func (b *Inboxes) Pull(ctx context.Context, agent string, max int, wait time.Duration) ([]Message, error) {
	if max <= 0 {
		max = 10
	}
	max = min(max, b.cfg.MaxAckPending)
	cons, err := b.consumer(ctx, agent)
	if err != nil {
		return nil, err
	}
	if err := b.loadRead(ctx, agent); err != nil {
		return nil, err
	}
	out, err := b.fetch(ctx, agent, cons, max, 0)
	if err != nil || len(out) > 0 || wait <= 0 {
		return out, err
	}
	// Nothing waits: block for the first to arrive, then take what came
	// with it.
	out, err = b.fetch(ctx, agent, cons, 1, wait)
	if err != nil || len(out) == 0 || max == 1 {
		return out, err
	}
	more, err := b.fetch(ctx, agent, cons, max-1, 0)
	return append(out, more...), err
}

// fetch takes up to n messages, waiting up to wait for them (0: only
// those there now).
func (b *Inboxes) fetch(ctx context.Context, agent string, cons jetstream.Consumer, n int, wait time.Duration) ([]Message, error) {
	var batch jetstream.MessageBatch
	var err error
	if wait <= 0 {
		batch, err = cons.FetchNoWait(n)
	} else {
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		batch, err = cons.Fetch(n, jetstream.FetchMaxWait(max(wait, time.Second)))
	}
	if err != nil {
		return nil, fmt.Errorf("pull inbox of %s: %w", agent, err)
	}
	var out []Message
	for msg := range batch.Messages() {
		m, ok := b.decode(agent, msg)
		if !ok {
			// Not an inbox message (junk published on the subject): no
			// reader can use it, so it is not handed out again.
			_ = msg.Term()
			continue
		}
		b.mu.Lock()
		done := m.Seq != 0 && m.Seq <= b.read[agent]
		b.mu.Unlock()
		if done {
			// Acknowledged before, as the log's record says, though the
			// consumer hands it out again: nats-server keeps a
			// consumer's acks in memory a moment before its store, and
			// a kill -9 of its process (fleetd up, embedded) in that
			// moment forgets them. Acknowledged again, not handed out.
			_ = msg.DoubleAck(ctx)
			continue
		}
		b.hold(agent, m.ID, msg)
		out = append(out, m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
		return out, fmt.Errorf("pull inbox of %s: %w", agent, err)
	}
	return out, nil
}

func (b *Inboxes) decode(agent string, msg jetstream.Msg) (Message, bool) {
	ev, err := b.cfg.Registry.Decode(msg.Subject(), msg.Data())
	if err != nil {
		return Message{}, false
	}
	d, ok := ev.Data.(events.AgentInbox)
	if !ok {
		return Message{}, false
	}
	m := Message{ID: ev.ID, To: agent, From: d.From, Text: d.Text, ReplyTo: d.ReplyTo, Turn: d.Turn, Status: d.Status, Time: ev.Time}
	if meta, err := msg.Metadata(); err == nil {
		m.Seq, m.Deliveries = meta.Sequence.Stream, meta.NumDelivered
	}
	return m, true
}

func (b *Inboxes) hold(agent, id string, msg jetstream.Msg) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[agent] == nil {
		b.held[agent] = map[string]jetstream.Msg{}
	}
	b.held[agent][id] = msg
}

// Ack acknowledges agent's messages ids: they are never handed out again.
// It returns the ids it acknowledged; the others were not held here —
// acknowledged already, never pulled, or pulled before fleetd restarted
// (those come back after AckWait, to be acknowledged then).
func (b *Inboxes) Ack(ctx context.Context, agent string, ids []string) (acked []string, err error) {
	for _, id := range ids {
		b.mu.Lock()
		msg, ok := b.held[agent][id]
		b.mu.Unlock()
		if !ok {
			continue
		}
		// DoubleAck: the server confirms, so "acknowledged" is stored
		// before the caller hears it.
		if err := msg.DoubleAck(ctx); err != nil {
			return acked, fmt.Errorf("ack %s of %s: %w", id, agent, err)
		}
		b.mu.Lock()
		delete(b.held[agent], id)
		b.mu.Unlock()
		acked = append(acked, id)
	}
	if len(acked) > 0 {
		if err := b.recordRead(ctx, agent); err != nil {
			return acked, err
		}
	}
	return acked, nil
}

// recordRead writes agent's acknowledged-through record when its
// consumer's ack floor has moved past the last one written here: where
// Open starts the consumer once the server has reclaimed it.
func (b *Inboxes) recordRead(ctx context.Context, agent string) error {
	cons, err := b.consumer(ctx, agent)
	if err != nil {
		return err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("inbox of %s: %w", agent, err)
	}
	through := info.AckFloor.Stream
	b.mu.Lock()
	moved := through > b.read[agent]
	b.mu.Unlock()
	if !moved {
		return nil
	}
	if _, err := b.cfg.Log.Append(ctx, events.Event{Subject: agent, Source: b.cfg.Source, Time: b.cfg.Now(),
		Data: events.AgentInboxRead{Through: through}}); err != nil {
		return fmt.Errorf("inbox of %s: acknowledged through #%d: %w", agent, through, err)
	}
	b.mu.Lock()
	b.read[agent] = max(b.read[agent], through)
	b.mu.Unlock()
	return nil
}
