package events

import (
	"cmp"
	"context"
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

	"github.com/fleetd/fleetd/events/eventcore"
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
	// AppendMany stores evs in order of their acks, not atomically: on an
	// error some may be stored and others not (their Ack has no Seq).
	// An event the checks refuse (its subject, its limits) stores none of
	// the call; one that fails later (its encoding, its publish) is
	// left out alone.
	// Each carries its id as the dedupe key, so calling it again with the
	// same events (within the dedupe window) stores only what is missing.
	// It is for bulk writes that need no all-or-none: several times the
	// throughput of AppendBatch without SyncAlways (see fleetd bench).
	AppendMany(ctx context.Context, evs []Event) ([]Ack, error)
	// Read yields the events matching q that are in the log when Read
	// starts, in order, then ends. Invalid messages are skipped and counted
	// (with q.Skips, a placeholder stands in for each).
	Read(ctx context.Context, q Query) iter.Seq2[Event, error]
	// Follow delivers the events matching q, then every new one, until
	// stopped. It rides out a broken read (a consumer lost with a cluster
	// member, missed heartbeats) by reading again from where it was; it
	// ends with an error wrapping ErrStreamLost when the stream is gone.
	Follow(ctx context.Context, q Query) (*Follower, error)
	// LastSeq is the stream sequence of the last message on subject (a
	// wildcard is allowed), or 0 when there is none: the value to pass to
	// ExpectLastSeq for the next aggregate write.
	LastSeq(ctx context.Context, subject string) (uint64, error)
	// SeqAt is the stream sequence of the last message the log stored at
	// or before t (by the server's clock, as Query.Since), 0 when there is
	// none: where a view of the log as of t ends (Query.ToSeq).
	SeqAt(ctx context.Context, t time.Time) (uint64, error)
	// State describes the stream now: its first and last sequence (the
	// first moves past 1 once retention trims it) and which incarnation it
	// is (Created), so a reader can tell a recreated stream, whose
	// sequences start again, from the one it was reading. It fails with
	// ErrStreamLost while there is no stream.
	State(ctx context.Context) (StreamState, error)
	// Skipped counts the messages readers skipped because they were not
	// valid events: each message (stream sequence) once, however many
	// readers skip it.
	Skipped() uint64
}

// guard sets the append's preconditions as headers: the stream, and the
// last sequence expected of the event's subject or of a filter. A lone
// publish and a batch (see coalescer) send the same ones.
func guard(h nats.Header, opts []AppendOption) {
	h.Set(jetstream.ExpectedStreamHeader, Stream)
	seq, filter, ok := eventcore.Expected(opts...)
	if !ok {
		return
	}
	h.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
	if filter != "" {
		h.Set(jetstream.ExpectedLastSubjSeqSubjHeader, filter)
	}
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
	// OnResume hears each time a reader or follower makes its consumer
	// again after it broke (cause: heartbeats missed, deleted, a delivery
	// skipped), e.g. to log it: the read goes on from where it was, but
	// a consumer that keeps breaking is worth knowing about. It must not
	// block.
	OnResume func(filters []string, cause error)
	// OnRetry hears that making a reader's consumer went unanswered or
	// found no JetStream, and is being tried again (right after a cluster
	// member died, until a new meta leader is elected; a server still
	// starting): the first time, then every 10 s of trying, with
	// how long the read has waited so far, e.g. to log it — the read
	// itself waits for as long as its ctx lets it. It must not block.
	OnRetry func(filters []string, waited time.Duration, err error)
	// OnAppend hears the outcome of every Append and AppendBatch: nil, or
	// the error as the caller gets it (ErrStoreFull, ErrStreamLost, …), so
	// a health watcher learns of a full store from the writes themselves.
	// It must not block.
	OnAppend func(err error)
	// CoalesceAppends makes the appends that come in while one is in
	// flight go together as one atomic batch ("group commit"): for a
	// server that syncs every write to disk (SyncAlways), where each
	// append otherwise waits for the syncs of those before it. Each
	// caller still gets its own event's answer (see coalescer).
	CoalesceAppends bool
	// CoalesceMin is the fewest queued appends CoalesceAppends stores as
	// one batch; fewer go one by one. Default 8: nats-server stages each
	// batch of a one-replica file stream in a file store of its own (~2 ms
	// a batch, against ~0.3 ms a synced publish). A replicated stream
	// stages a batch in memory and pays a consensus round per publish:
	// give it 2.
	CoalesceMin int
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
	l := &jsLog{js: js, o: o}
	if o.CoalesceAppends {
		l.co = &coalescer{l: l, min: cmp.Or(o.CoalesceMin, minCoalesced)}
	}
	return l
}

type jsLog struct {
	js      jetstream.JetStream
	o       Options
	co      *coalescer // nil unless Options.CoalesceAppends
	skipped atomic.Uint64
	seen    skipSet
	// singleUntil (unix ns): the stream was seen with one replica, so
	// readers need no placement check until then (placedOnWholeCopy).
	singleUntil atomic.Int64
}

func (l *jsLog) Skipped() uint64 { return l.skipped.Load() }

func (l *jsLog) prepare(ev *Event) (*nats.Msg, error) {
	if err := l.check(ev); err != nil {
		return nil, err
	}
	return l.encode(ev)
}

// check fills ev's defaults and its stream subject and refuses what no
// reader would take: everything an append can refuse before it encodes.
func (l *jsLog) check(ev *Event) error {
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
		return err
	}
	// What no reader would take is not written either.
	if err := l.o.Registry.Check(*ev); err != nil {
		return err
	}
	ev.NATSSubject = subj
	return nil
}

// encode makes the message of an event that check passed.
func (l *jsLog) encode(ev *Event) (*nats.Msg, error) {
	// MarshalJSON directly: json.Marshal would re-scan and compact what
	// it returns, which costs four times the encoding itself.
	body, err := ev.MarshalJSON()
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(ev.NATSSubject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	return msg, nil
}

func (l *jsLog) Append(ctx context.Context, ev Event, opts ...AppendOption) (Ack, error) {
	msg, err := l.prepare(&ev)
	if err != nil {
		return Ack{}, fmt.Errorf("append: %w", err)
	}
	guard(msg.Header, opts)
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	var (
		seq uint64
		dup bool
	)
	if l.co != nil {
		seq, dup, err = l.co.append(ctx, msg)
	} else {
		seq, dup, err = l.publishOne(ctx, msg)
	}
	if err != nil {
		l.appended(err)
		return Ack{}, err
	}
	l.appended(nil)
	return Ack{ID: ev.ID, Subject: msg.Subject, Seq: seq, Duplicate: dup}, nil
}

// manyInFlight bounds AppendMany's async publishes in flight, well under
// nats.go's own limit (4,000), which other writers on the same JetStream
// context share.
const manyInFlight = 1024

func (l *jsLog) AppendMany(ctx context.Context, evs []Event) ([]Ack, error) {
	// Every event is checked before anything is sent: an invalid one
	// stores none. Each is then encoded just before it is published, so
	// the server stores the first while the next ones are encoded.
	acks := make([]Ack, len(evs))
	for i := range evs {
		if err := l.check(&evs[i]); err != nil {
			return nil, fmt.Errorf("append many, event %d: %w", i, err)
		}
		acks[i] = Ack{ID: evs[i].ID, Subject: evs[i].NATSSubject}
	}
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	var failed []error
	futures := make([]jetstream.PubAckFuture, min(len(evs), manyInFlight))
	for start := 0; start < len(evs); start += manyInFlight {
		window := futures[:min(manyInFlight, len(evs)-start)]
		for k := range window {
			msg, err := l.encode(&evs[start+k])
			if err == nil {
				window[k], err = l.js.PublishMsgAsync(msg, jetstream.WithExpectStream(Stream))
			}
			if err != nil {
				window[k] = nil
				failed = append(failed, fmt.Errorf("event %d: %w", start+k, translate(err)))
			}
		}
		for k, f := range window {
			if f == nil {
				continue
			}
			select {
			case pa := <-f.Ok():
				acks[start+k].Seq, acks[start+k].Duplicate = pa.Sequence, pa.Duplicate
			case err := <-f.Err():
				failed = append(failed, fmt.Errorf("event %d: %w", start+k, translate(err)))
			case <-ctx.Done():
				failed = append(failed, fmt.Errorf("event %d: %w", start+k, ctx.Err()))
			}
		}
	}
	if len(failed) > 0 {
		err := fmt.Errorf("append many: %d of %d events not stored, the first: %w", len(failed), len(evs), failed[0])
		l.appended(err)
		return acks, err
	}
	l.appended(nil)
	return acks, nil
}

// appended tells OnAppend how an append went. A concurrency conflict
// says nothing about the stream's health, so it counts as a success.
func (l *jsLog) appended(err error) {
	if l.o.OnAppend == nil {
		return
	}
	if errors.Is(err, ErrConcurrency) || errors.Is(err, ErrDuplicateBatch) {
		err = nil
	}
	l.o.OnAppend(err)
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
	if len(evs) <= 1 || len(evs) > MaxBatch {
		return l.appendBatch(ctx, evs)
	}
	acks, err := l.appendBatch(ctx, evs)
	l.appended(err)
	return acks, err
}

func (l *jsLog) appendBatch(ctx context.Context, evs []Event) ([]Ack, error) {
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
	msgs := make([]*nats.Msg, len(evs))
	acks := make([]Ack, len(evs))
	for i := range evs {
		msg, err := l.prepare(&evs[i])
		if err != nil {
			return nil, fmt.Errorf("append batch event %d: %w", i, err)
		}
		msgs[i], acks[i] = msg, Ack{ID: evs[i].ID, Subject: msg.Subject}
	}
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	first, err := l.sendBatch(ctx, msgs)
	if err != nil {
		return nil, fmt.Errorf("append batch: %w", translate(err))
	}
	for j := range acks {
		acks[j].Seq = first + uint64(j)
	}
	return acks, nil
}

// sendBatch publishes msgs as one atomic batch and returns the stream
// sequence of the first. A batch the server refused returns its
// *jetstream.APIError as it is.
func (l *jsLog) sendBatch(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
	nc := l.js.Conn()
	id := l.o.NewID()
	for i, m := range msgs[:len(msgs)-1] {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if err := nc.PublishMsg(m); err != nil {
			return 0, err
		}
	}
	last := msgs[len(msgs)-1]
	last.Header.Set("Nats-Batch-Id", id)
	last.Header.Set("Nats-Batch-Sequence", strconv.Itoa(len(msgs)))
	last.Header.Set("Nats-Batch-Commit", "1")
	resp, err := nc.RequestMsgWithContext(ctx, last)
	if err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	var ba batchAck
	if err := json.Unmarshal(resp.Data, &ba); err != nil {
		return 0, fmt.Errorf("commit: bad ack: %w", err)
	}
	if ba.Error != nil {
		return 0, ba.Error
	}
	return ba.Sequence - uint64(len(msgs)) + 1, nil
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
	return leaderGet(ctx, l.js, map[string]any{"last_by_subj": subject})
}

func (l *jsLog) SeqAt(ctx context.Context, t time.Time) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	after, err := l.firstSince(ctx, SubjectAll, t.Add(time.Nanosecond))
	if err != nil {
		return 0, fmt.Errorf("seq at %s: %w", t.Format(time.RFC3339Nano), err)
	}
	if after > 0 {
		return after - 1, nil
	}
	// Nothing was stored after t: everything there is was stored by then.
	return l.lastSeq(ctx, SubjectAll)
}

// firstSince asks the stream leader for the first sequence on subject
// stored at or after t; 0 when there is none.
func (l *jsLog) firstSince(ctx context.Context, subject string, t time.Time) (uint64, error) {
	return leaderGet(ctx, l.js, map[string]any{"next_by_subj": subject, "start_time": t.UTC()})
}

func leaderGet(ctx context.Context, js jetstream.JetStream, q map[string]any) (uint64, error) {
	req, _ := json.Marshal(q)
	resp, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+Stream, req)
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
		return 0, fmt.Errorf("get %v: %w", q, translate(r.Error))
	case r.Message == nil:
		return 0, nil
	}
	return r.Message.Seq, nil
}

// decode turns a stream message at seq into an event, or counts and
// reports it.
func (l *jsLog) decode(msg jetstream.Msg, seq uint64) (Event, bool) {
	ev, err := l.o.Registry.Decode(msg.Subject(), msg.Data())
	if err != nil {
		l.skip(msg.Subject(), seq, err)
		return Event{}, false
	}
	ev.Seq = seq
	return ev, true
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
