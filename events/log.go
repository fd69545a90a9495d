package events

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
)

// Log is the fleet's event log. Implementations must be safe for
// concurrent use.
type Log interface {
	// Append stores ev and returns its stream position. It fills ID,
	// Time and Source when empty. Appending an event whose ID is already
	// stored (within the dedupe window) stores nothing and reports
	// Ack.Duplicate. With ExpectLastSeq options it fails with
	// ErrConcurrency when the aggregate moved on.
	Append(ctx context.Context, ev Event, opts ...AppendOption) (Ack, error)
	// AppendBatch stores evs atomically: all or none.
	AppendBatch(ctx context.Context, evs []Event) ([]Ack, error)
	// Read yields the events matching q that are in the log when Read
	// starts, in order, then ends. Invalid messages are skipped and counted
	// (with q.Skips, a placeholder stands in for each).
	Read(ctx context.Context, q Query) iter.Seq2[Event, error]
	// Follow delivers the events matching q, then every new one, until
	// stopped.
	Follow(ctx context.Context, q Query) (*Follower, error)
	// LastSeq is the stream sequence of the last message on subject (a
	// wildcard is allowed), or 0 when there is none: the value to pass to
	// ExpectLastSeq for the next aggregate write.
	LastSeq(ctx context.Context, subject string) (uint64, error)
	// Skipped counts the messages readers skipped because they were not
	// valid events: each message (stream sequence) once, however many
	// readers skip it.
	Skipped() uint64
}

// Ack is where an appended event landed.
type Ack struct {
	ID        string
	Subject   string
	Seq       uint64
	Duplicate bool
}

// Query selects events by subject and starting point.
type Query struct {
	// Subjects filter the log; empty means fleet.>.
	Subjects []string
	// FromSeq starts at this stream sequence (inclusive).
	FromSeq uint64
	// Since starts at the first event stored at or after this time.
	Since time.Time
	// New starts after the current end: only events appended from now on.
	New bool
	// Buffer sizes a Follower's channel. Default 256.
	Buffer int
	// Prefetch bounds how many messages a reader pulls from the server
	// ahead of what it has decoded and handed on. Default 512. A reader
	// whose consumer stops taking events holds at most Buffer + Prefetch
	// of them; many such readers on one NATS connection keep Prefetch
	// small.
	Prefetch int
	// PrefetchBytes, when set, also bounds the bytes of one pull from the
	// server, so large messages are pulled a few at a time. It must not
	// be below the largest message (the server's max_payload), or the
	// reader stalls.
	PrefetchBytes int
	// Skips asks for a placeholder in place of each message that is not a
	// valid event: an Event with no Data, only Seq and NATSSubject (see
	// Event.Skipped). A reader that tracks its position in the log (a
	// projection) then moves past junk too, and "caught up with the end"
	// holds when the last message is junk.
	Skips bool
}

// AppendOption sets a per-append precondition.
type AppendOption func(*appendOpts)

type appendOpts struct {
	expect    *uint64
	expectFor string
}

// ExpectLastSeq makes the append conditional on the event's own subject
// having seq as its last sequence (0: no message yet).
func ExpectLastSeq(seq uint64) AppendOption {
	return func(o *appendOpts) { o.expect = &seq; o.expectFor = "" }
}

// ExpectLastSeqFor makes the append conditional on the last message
// matching filter (e.g. fleet.agent.X.>, an aggregate spanning several
// subjects) having sequence seq.
func ExpectLastSeqFor(seq uint64, filter string) AppendOption {
	return func(o *appendOpts) { o.expect = &seq; o.expectFor = filter }
}

// Options configure a JetStream-backed Log.
type Options struct {
	// Registry decodes events; default NewRegistry().
	Registry *Registry
	// Source is the CloudEvents source of appended events,
	// fleetd/<host>/<component>.
	Source string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// NewID makes event ids; default monotonic ULIDs.
	NewID func() string
	// OnSkip hears about every skipped message, e.g. to log it: once per
	// message, however many of the Log's readers skip it (a message
	// without a stream sequence: every time).
	OnSkip func(subject string, seq uint64, err error)
	// Timeout bounds calls whose ctx has no deadline. Default 10s.
	Timeout time.Duration
}

// New returns a Log over the FLEET stream of js. It does no I/O; the stream
// must exist (EnsureStream) before the first call.
func New(js jetstream.JetStream, o Options) Log {
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	if o.Source == "" {
		o.Source = "fleetd"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = NewULIDSource(o.Now)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	return &jsLog{js: js, o: o}
}

// NewULIDSource returns a goroutine-safe generator of monotonic ULIDs.
func NewULIDSource(now func() time.Time) func() string {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Timestamp(now()), entropy).String()
	}
}

type jsLog struct {
	js      jetstream.JetStream
	o       Options
	skipped atomic.Uint64
	seen    skipSet

	mu     sync.Mutex
	stream jetstream.Stream
}

func (l *jsLog) Skipped() uint64 { return l.skipped.Load() }

func (l *jsLog) prepare(ev *Event) (*nats.Msg, error) {
	if ev.ID == "" {
		ev.ID = l.o.NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = l.o.Now()
	}
	if ev.Source == "" {
		ev.Source = l.o.Source
	}
	subj, err := ev.StreamSubject()
	if err != nil {
		return nil, err
	}
	// What no reader would take is not written either.
	if err := l.o.Registry.Check(*ev); err != nil {
		return nil, err
	}
	// MarshalJSON directly: json.Marshal would re-scan and compact what
	// it returns, which costs four times the encoding itself.
	body, err := ev.MarshalJSON()
	if err != nil {
		return nil, err
	}
	ev.NATSSubject = subj
	msg := nats.NewMsg(subj)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	return msg, nil
}

func (l *jsLog) Append(ctx context.Context, ev Event, opts ...AppendOption) (Ack, error) {
	msg, err := l.prepare(&ev)
	if err != nil {
		return Ack{}, fmt.Errorf("append: %w", err)
	}
	var ao appendOpts
	for _, o := range opts {
		o(&ao)
	}
	popts := []jetstream.PublishOpt{jetstream.WithExpectStream(Stream)}
	if ao.expect != nil {
		if ao.expectFor != "" {
			popts = append(popts, jetstream.WithExpectLastSequenceForSubject(*ao.expect, ao.expectFor))
		} else {
			popts = append(popts, jetstream.WithExpectLastSequencePerSubject(*ao.expect))
		}
	}
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	pa, err := l.js.PublishMsg(ctx, msg, popts...)
	if err != nil {
		return Ack{}, fmt.Errorf("append %s: %w", msg.Subject, translate(err))
	}
	return Ack{ID: ev.ID, Subject: msg.Subject, Seq: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// batchAck is the commit reply of an atomic batch.
type batchAck struct {
	jetstream.PubAck
	BatchID string              `json:"batch,omitempty"`
	Count   int                 `json:"count,omitempty"`
	Error   *jetstream.APIError `json:"error,omitempty"`
}

// MaxBatch is the most events one AppendBatch may carry (nats-server's
// default atomic batch limit).
const MaxBatch = 1000

func (l *jsLog) AppendBatch(ctx context.Context, evs []Event) ([]Ack, error) {
	switch {
	case len(evs) == 0:
		return nil, nil
	case len(evs) == 1:
		a, err := l.Append(ctx, evs[0])
		if err != nil {
			return nil, err
		}
		return []Ack{a}, nil
	case len(evs) > MaxBatch:
		return nil, fmt.Errorf("append batch: %d events, at most %d", len(evs), MaxBatch)
	}
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	nc := l.js.Conn()
	batchID := l.o.NewID()
	acks := make([]Ack, len(evs))
	for i := range evs {
		msg, err := l.prepare(&evs[i])
		if err != nil {
			return nil, fmt.Errorf("append batch event %d: %w", i, err)
		}
		msg.Header.Set("Nats-Batch-Id", batchID)
		msg.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		acks[i] = Ack{ID: evs[i].ID, Subject: msg.Subject}
		if i < len(evs)-1 {
			if err := nc.PublishMsg(msg); err != nil {
				return nil, fmt.Errorf("append batch: %w", err)
			}
			continue
		}
		msg.Header.Set("Nats-Batch-Commit", "1")
		resp, err := nc.RequestMsgWithContext(ctx, msg)
		if err != nil {
			return nil, fmt.Errorf("append batch commit: %w", err)
		}
		var ba batchAck
		if err := json.Unmarshal(resp.Data, &ba); err != nil {
			return nil, fmt.Errorf("append batch commit: bad ack: %w", err)
		}
		if ba.Error != nil {
			return nil, fmt.Errorf("append batch: %w", translate(ba.Error))
		}
		first := ba.Sequence - uint64(len(evs)) + 1
		for j := range acks {
			acks[j].Seq = first + uint64(j)
		}
	}
	return acks, nil
}

func (l *jsLog) streamHandle(ctx context.Context) (jetstream.Stream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stream != nil {
		return l.stream, nil
	}
	s, err := l.js.Stream(ctx, Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", Stream, err)
	}
	l.stream = s
	return s, nil
}

func (l *jsLog) LastSeq(ctx context.Context, subject string) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	return l.lastSeq(ctx, subject)
}

// lastSeq asks the stream leader (the plain message-get API, not direct
// get, which a lagging replica may answer) for the last sequence on
// subject; 0 when there is none.
func (l *jsLog) lastSeq(ctx context.Context, subject string) (uint64, error) {
	return l.leaderGet(ctx, map[string]any{"last_by_subj": subject})
}

// firstSince asks the stream leader for the first sequence on subject
// stored at or after t; 0 when there is none.
func (l *jsLog) firstSince(ctx context.Context, subject string, t time.Time) (uint64, error) {
	return l.leaderGet(ctx, map[string]any{"next_by_subj": subject, "start_time": t.UTC()})
}

func (l *jsLog) leaderGet(ctx context.Context, q map[string]any) (uint64, error) {
	req, _ := json.Marshal(q)
	resp, err := l.js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+Stream, req)
	if err != nil {
		return 0, fmt.Errorf("get %v: %w", q, err)
	}
	var r struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, fmt.Errorf("get %v: %w", q, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case r.Error != nil:
		return 0, fmt.Errorf("get %v: %w", q, r.Error)
	case r.Message == nil:
		return 0, nil
	}
	return r.Message.Seq, nil
}

// release deletes an ordered consumer's current server-side consumer.
func (l *jsLog) release(c jetstream.Consumer) {
	info := c.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.js.DeleteConsumer(ctx, Stream, info.Name)
}

func (l *jsLog) consumer(ctx context.Context, q Query) (jetstream.Consumer, error) {
	s, err := l.streamHandle(ctx)
	if err != nil {
		return nil, err
	}
	// A short inactivity threshold and an explicit delete (release) keep
	// readers from piling up server-side consumers: 2.15 caps a stream at
	// 1,000 by default.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: q.Subjects, InactiveThreshold: 30 * time.Second}
	if len(cfg.FilterSubjects) == 0 {
		cfg.FilterSubjects = []string{SubjectAll}
	}
	switch {
	case q.New:
		// "New" is pinned to a sequence now: an ordered consumer that
		// resets before its first message would otherwise re-apply
		// "deliver new" at the reset and skip what came in between.
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("follow from now: %w", err)
		}
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = info.State.LastSeq + 1
	case q.FromSeq > 0:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = q.FromSeq
	case !q.Since.IsZero():
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		since := q.Since
		cfg.OptStartTime = &since
	}
	// Creating a consumer needs the JetStream meta leader. Right after a
	// cluster member died the request can go unanswered until a new leader
	// is elected, so try in short rounds within the caller's deadline.
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := s.OrderedConsumer(try, cfg)
		cancel()
		if err == nil {
			return c, nil
		}
		retry := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
			errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout)
		if !retry || ctx.Err() != nil {
			return nil, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decode turns a stream message into an event, or counts and reports it.
// It returns the message's stream sequence either way.
func (l *jsLog) decode(msg jetstream.Msg) (Event, uint64, bool) {
	md, err := msg.Metadata()
	if err != nil {
		l.skip(msg.Subject(), 0, err)
		return Event{}, 0, false
	}
	ev, err := l.o.Registry.Decode(msg.Subject(), msg.Data())
	if err != nil {
		l.skip(msg.Subject(), md.Sequence.Stream, err)
		return Event{}, md.Sequence.Stream, false
	}
	ev.Seq = md.Sequence.Stream
	return ev, md.Sequence.Stream, true
}

// skip counts and reports a message that is not a valid event, once per
// stream sequence: every reader of the log (the projection, the gateway's
// follower, the shim's) meets the same junk, and one report is enough.
func (l *jsLog) skip(subject string, seq uint64, err error) {
	if seq != 0 && !l.seen.add(seq) {
		return
	}
	l.skipped.Add(1)
	if l.o.OnSkip != nil {
		l.o.OnSkip(subject, seq, err)
	}
}

// skipSetSize is how many skipped sequences a Log remembers to report each
// once. A reader lagging further behind than this reports junk again.
const skipSetSize = 4096

// skipSet remembers the last skipSetSize skipped stream sequences.
type skipSet struct {
	mu   sync.Mutex
	set  map[uint64]struct{}
	ring []uint64
	next int
}

// add records seq and reports whether it is new.
func (s *skipSet) add(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[seq]; ok {
		return false
	}
	if s.set == nil {
		s.set = make(map[uint64]struct{}, skipSetSize)
		s.ring = make([]uint64, skipSetSize)
	}
	if old := s.ring[s.next]; old != 0 {
		delete(s.set, old)
	}
	s.ring[s.next] = seq
	s.next = (s.next + 1) % skipSetSize
	s.set[seq] = struct{}{}
	return true
}

func (l *jsLog) Read(ctx context.Context, q Query) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		q.New = false
		if len(q.Subjects) == 0 {
			q.Subjects = []string{SubjectAll}
		}
		// The end is fixed up front, by the stream leader: a consumer may
		// sit on a replica that has not applied the newest messages yet,
		// and its pending count would end the read too early.
		setup, cancel := withDefaultTimeout(ctx, l.o.Timeout)
		var end, start uint64
		for _, subj := range q.Subjects {
			last, err := l.lastSeq(setup, subj)
			if err != nil {
				cancel()
				yield(Event{}, fmt.Errorf("read: %w", err))
				return
			}
			end = max(end, last)
			if !q.Since.IsZero() && q.FromSeq == 0 {
				// A time becomes a sequence, so "is there anything to
				// read" has an exact answer.
				first, err := l.firstSince(setup, subj, q.Since)
				if err != nil {
					cancel()
					yield(Event{}, fmt.Errorf("read: %w", err))
					return
				}
				if first > 0 && (start == 0 || first < start) {
					start = first
				}
			}
		}
		if !q.Since.IsZero() && q.FromSeq == 0 {
			if start == 0 {
				cancel()
				return
			}
			q.FromSeq, q.Since = start, time.Time{}
		}
		if end == 0 || end < q.FromSeq {
			cancel()
			return
		}
		c, err := l.consumer(setup, q)
		cancel()
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer l.release(c)
		it, err := c.Messages(pullOpt(q))
		if err != nil {
			yield(Event{}, fmt.Errorf("read: %w", err))
			return
		}
		defer it.Stop()
		for {
			msg, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				yield(Event{}, fmt.Errorf("read: %w", err))
				return
			}
			ev, seq, ok := l.decode(msg)
			if !ok && q.Skips && seq != 0 {
				ev, ok = Event{Seq: seq, NATSSubject: msg.Subject()}, true
			}
			if ok && !yield(ev, nil) {
				return
			}
			if seq >= end {
				return
			}
		}
	}
}

// pullOpt is how far a reader of q pulls ahead.
func pullOpt(q Query) jetstream.PullMessagesOpt {
	n := q.Prefetch
	if n <= 0 {
		n = 512
	}
	if q.PrefetchBytes > 0 {
		return jetstream.PullMaxMessagesWithBytesLimit(n, q.PrefetchBytes)
	}
	return jetstream.PullMaxMessages(n)
}

// Follower is a live subscription to the log. Events arrive in stream
// order on Events until Stop is called or the context ends.
type Follower struct {
	events chan Event
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Events delivers decoded events. It is closed when the follower stops.
func (f *Follower) Events() <-chan Event { return f.events }

// Buffered is how many events wait in Events, not yet received.
func (f *Follower) Buffered() int { return len(f.events) }

// Done is closed once the follower has stopped.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Err is why the follower stopped: nil after Stop or context end.
func (f *Follower) Err() error {
	<-f.done
	return f.err
}

// Stop ends the subscription and waits for it. It is idempotent.
func (f *Follower) Stop() {
	f.cancel()
	<-f.done
}

func (l *jsLog) Follow(ctx context.Context, q Query) (*Follower, error) {
	setup, cancelSetup := withDefaultTimeout(ctx, l.o.Timeout)
	c, err := l.consumer(setup, q)
	cancelSetup()
	if err != nil {
		return nil, err
	}
	it, err := c.Messages(pullOpt(q))
	if err != nil {
		l.release(c)
		return nil, fmt.Errorf("follow: %w", err)
	}
	if q.Buffer <= 0 {
		q.Buffer = 256
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{events: make(chan Event, q.Buffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.events)
		defer l.release(c)
		defer it.Stop()
		for {
			msg, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					f.err = fmt.Errorf("follow: %w", err)
				}
				return
			}
			ev, seq, ok := l.decode(msg)
			if !ok && q.Skips && seq != 0 {
				ev, ok = Event{Seq: seq, NATSSubject: msg.Subject()}, true
			}
			if !ok {
				continue
			}
			select {
			case f.events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return f, nil
}
