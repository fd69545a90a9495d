package events

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// StreamState is the FLEET stream as it stands.
type StreamState struct {
	// FirstSeq and LastSeq bound what the stream holds; FirstSeq passes 1
	// once retention has trimmed the beginning.
	FirstSeq, LastSeq uint64
	Msgs, Bytes       uint64
	// Created identifies the incarnation: a stream deleted and created
	// again (its sequences may restart at 1) has a new one.
	Created time.Time
	// Config is the stream's configuration (limits, replicas).
	Config jetstream.StreamConfig
}

func (l *jsLog) State(ctx context.Context) (StreamState, error) {
	ctx, cancel := withDefaultTimeout(ctx, l.o.Timeout)
	defer cancel()
	return streamState(ctx, l.js)
}

func streamState(ctx context.Context, js jetstream.JetStream) (StreamState, error) {
	s, err := js.Stream(ctx, Stream)
	if err != nil {
		return StreamState{}, fmt.Errorf("stream %s: %w", Stream, translate(err))
	}
	info := s.CachedInfo()
	return StreamState{
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Msgs: info.State.Msgs, Bytes: info.State.Bytes,
		Created: info.Created, Config: info.Config,
	}, nil
}

// reader is one ordered, ephemeral read of the stream. fleetd owns it end
// to end rather than using jetstream's ordered consumer, whose Next
// retries a lost consumer forever under a lock that Stop needs, with
// waits no context ends: a deleted stream made Follower.Stop hang.
// Every wait here ends with ctx. A reader is used by one goroutine.
type reader struct {
	l       *jsLog
	filters []string
	pull    jetstream.PullMessagesOpt // how far it pulls ahead (Query.Prefetch)
	// next is the stream sequence to read from when the consumer is made
	// again; dseq the consumer's delivery sequence of the last message.
	next uint64
	dseq uint64
	// start is where the first consumer started, for a consumer made
	// again before anything was read.
	start jetstream.ConsumerConfig
	// created is the incarnation the reader reads: a consumer is never
	// made again on a stream created since (its sequences restarted).
	created time.Time
	cons    jetstream.Consumer
	it      jetstream.MessagesContext
	// behind says the last message left more for the consumer on the
	// server; round is the current short wait while it does, quiet how
	// many rounds in a row brought nothing (see nextOf).
	behind bool
	round  context.Context
	done   context.CancelFunc
	quiet  int
}

// open makes the reader's first consumer, starting where q says.
func (l *jsLog) open(ctx context.Context, q Query) (*reader, error) {
	r := &reader{l: l, filters: q.Subjects, pull: pullOpt(q)}
	if len(r.filters) == 0 {
		r.filters = []string{SubjectAll}
	}
	cfg := r.config()
	switch {
	case q.New:
		// "New" is pinned to a sequence now: a consumer made again before
		// its first message would otherwise re-apply "deliver new" and
		// skip what came in between.
		last, err := l.lastSeq(ctx, SubjectAll)
		if err != nil {
			return nil, fmt.Errorf("follow from now: %w", err)
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	case q.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, q.FromSeq
	case !q.Since.IsZero():
		since := q.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	r.start = cfg
	st, err := streamState(ctx, l.js)
	if err != nil {
		return nil, fmt.Errorf("read %v: %w", r.filters, err)
	}
	r.created = st.Created
	if err := r.subscribe(ctx, cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// config is an ordered consumer's configuration without a start.
func (r *reader) config() jetstream.ConsumerConfig {
	// A short inactivity threshold and an explicit delete (release) keep
	// readers from piling up server-side consumers: 2.15 caps a stream at
	// 1,000 by default.
	cfg := jetstream.ConsumerConfig{
		Name: "fleetd_" + nuid.Next(), AckPolicy: jetstream.AckNonePolicy, Replicas: 1, MemoryStorage: true,
		InactiveThreshold: 30 * time.Second,
	}
	if len(r.filters) == 1 {
		cfg.FilterSubject = r.filters[0]
	} else {
		cfg.FilterSubjects = r.filters
	}
	return cfg
}

// createWait is how long a consumer create may go unanswered before it
// is asked again.
const createWait = 2 * time.Second

// retryEvery is how often Options.OnRetry hears of a read still trying
// to make its consumer (a variable for the test of that spacing).
var retryEvery = 10 * time.Second

// subscribe makes a consumer with cfg and starts pulling from it.
// Creating a consumer needs the JetStream meta leader. Right after a
// cluster member died the request can go unanswered until a new leader is
// elected, or, placed on the member that died, until nats-server
// declares it gone; so it tries in short rounds within ctx, each
// unanswered one under a new name.
func (r *reader) subscribe(ctx context.Context, cfg jetstream.ConsumerConfig) error {
	began, tell := time.Now(), time.Duration(0)
	for {
		try, cancel := context.WithTimeout(ctx, createWait)
		c, err := r.l.js.CreateOrUpdateConsumer(try, Stream, cfg)
		cancel()
		if err == nil && !r.l.placedOnWholeCopy(ctx, c) {
			// Made again elsewhere (placement is random among the
			// stream's peers): a new name, so it is a new consumer.
			r.l.release(c)
			cfg.Name = "fleetd_" + nuid.Next()
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return fmt.Errorf("read %v: %w", r.filters, ctx.Err())
			}
			continue
		}
		if err == nil {
			it, err := c.Messages(r.pull, jetstream.PullHeartbeat(heartbeat),
				jetstream.WithMessagesErrOnMissingHeartbeat(true))
			if err != nil {
				r.l.release(c)
				return fmt.Errorf("read %v: %w", r.filters, err)
			}
			// A new consumer is waited on plainly until its first
			// message says how much more it has.
			r.cons, r.it, r.dseq, r.behind = c, it, 0, false
			r.endRound()
			return nil
		}
		unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
		retry := unanswered || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders)
		if !retry || ctx.Err() != nil {
			return fmt.Errorf("read %v: %w", r.filters, translate(err))
		}
		if waited := time.Since(began); waited >= tell && r.l.o.OnRetry != nil {
			why := translate(err)
			if unanswered {
				why = fmt.Errorf("no answer to the consumer create within %s (the JetStream meta leader, or the member it placed the consumer on, does not answer): %w", createWait, err)
			}
			r.l.o.OnRetry(r.filters, waited, why)
			tell = waited + retryEvery
		}
		if unanswered {
			// The consumer may have been made, on a member that cannot
			// answer: one killed a moment ago, which the meta leader
			// still takes for live. Asked again, the same name is the
			// same consumer on the same dead member, until nats-server
			// declares it gone minutes later; a new name is placed anew.
			go r.l.releaseName(cfg.Name)
			cfg.Name = "fleetd_" + nuid.Next()
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("read %v: %w", r.filters, err)
		}
	}
}

// placedOnWholeCopy reports whether consumer c reads a complete copy of
// the stream: a replicated stream's leader, or a replica that is current
// with no lag. JetStream places a reader's R1 consumer on any peer of the
// stream, and one placed on a member that has just restarted and is still
// catching up was seen to deliver later messages of its filter while
// earlier ones were missing — a gateway that folded that would type a
// turn that had already replied. Without a cluster, or without the right
// to ask (the stream's info), any placement is taken.
func (l *jsLog) placedOnWholeCopy(ctx context.Context, c jetstream.Consumer) bool {
	ci := c.CachedInfo()
	if ci == nil || ci.Cluster == nil || ci.Cluster.Leader == "" || time.Now().UnixNano() < l.singleUntil.Load() {
		return true
	}
	ctx, cancel := withDefaultTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := l.js.Stream(ctx, Stream)
	if err != nil {
		return true
	}
	sc := st.CachedInfo().Cluster
	if sc == nil || len(sc.Replicas) == 0 {
		// One copy: nothing to check for a while (a standalone server
		// reports cluster info too, so every reader would ask).
		l.singleUntil.Store(time.Now().Add(time.Minute).UnixNano())
		return true
	}
	on := ci.Cluster.Leader
	if on == sc.Leader {
		return true
	}
	for _, p := range sc.Replicas {
		if p.Name == on {
			return p.Current && p.Lag == 0 && !p.Offline
		}
	}
	return false
}

// errGap means a consumer skipped a delivery: it was reset server-side.
var errGap = errors.New("consumer delivery gap")

// nextMsg returns the next message and its stream sequence. An error is
// returned as it is: the caller decides whether to resume.
func (r *reader) nextMsg(ctx context.Context) (jetstream.Msg, uint64, error) {
	msg, err := r.nextOf(ctx)
	if err != nil {
		return nil, 0, err
	}
	md, err := msg.Metadata()
	if err != nil {
		// Not a stream message at all; count it and go on.
		r.l.skip(msg.Subject(), 0, err)
		return nil, 0, nil
	}
	if md.Sequence.Consumer != r.dseq+1 {
		return nil, 0, errGap
	}
	r.dseq = md.Sequence.Consumer
	r.next = md.Sequence.Stream + 1
	r.behind = md.NumPending > 0
	return msg, md.Sequence.Stream, nil
}

// heartbeat is how often a consumer with nothing to deliver says it is
// there, as jetstream's ordered consumer has it: a consumer gone quiet
// (lost with a cluster member, never started) is noticed after two
// missed, and made again. Short, because a gateway's fold stands still
// meanwhile: a reader whose consumer sat on a member that froze read
// nothing for ten seconds at 5s; and role dispatch waits for its fold
// (the router decides on caught-up views), where a turn must be assigned
// on the survivors within 3 s of a host's loss — at 2s the cluster test
// saw 5 s. A heartbeat every 500ms is two small messages a second a
// reader, nothing beside the log's traffic.
const heartbeat = 500 * time.Millisecond

// repullRound is how long the reader waits for a message in one go while
// the server holds more for its consumer.
const repullRound = 100 * time.Millisecond

// nextOf waits for the consumer's next message. While the server holds
// more for it, it waits in short rounds, each a new call to the
// iterator: nats.go's iterator (v1.55.0) decides whether to ask for more
// only when Next is called, and skips asking while its last request is
// still being sent; when the reader takes the last message it asked for
// in that moment, Next waits for messages nobody asked for, until the
// heartbeat check gives up two heartbeats later (4 of 18 rebuilds of
// 200,000 events stalled so, for ten seconds each, with two busy loops
// beside them). A new round asks again. Rounds that bring nothing for as
// long as the heartbeat check would wait end as it would, with
// ErrNoHeartbeat: the consumer is gone.
func (r *reader) nextOf(ctx context.Context) (jetstream.Msg, error) {
	if !r.behind {
		return r.it.Next(jetstream.NextContext(ctx))
	}
	for {
		// A round spans calls (one timer every 100 ms, not one a
		// message); one that ends while messages flow costs a call.
		if r.round == nil || r.round.Err() != nil {
			r.endRound()
			r.round, r.done = context.WithTimeout(ctx, repullRound)
		}
		msg, err := r.it.Next(jetstream.NextContext(r.round))
		if err == nil {
			r.quiet = 0
			return msg, nil
		}
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, err
		}
		if r.quiet++; time.Duration(r.quiet)*repullRound >= 2*heartbeat {
			r.quiet = 0
			return nil, jetstream.ErrNoHeartbeat
		}
	}
}

// endRound releases the current round's timer.
func (r *reader) endRound() {
	if r.done != nil {
		r.done()
		r.round, r.done = nil, nil
	}
}

// resume drops the current consumer and makes a new one that starts
// after the last message read. It retries with backoff until it works,
// ctx ends, or the stream is gone (ErrStreamLost).
func (r *reader) resume(ctx context.Context, cause error) error {
	r.close()
	backoff := 50 * time.Millisecond
	for {
		cfg := r.config()
		if r.next > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.next
		} else {
			// Nothing read yet: start where the first consumer did.
			cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = r.start.DeliverPolicy, r.start.OptStartSeq, r.start.OptStartTime
		}
		st, err := streamState(ctx, r.l.js)
		if err == nil && !st.Created.Equal(r.created) {
			// Same name, new stream: its sequences say nothing about
			// where this reader was. Whoever reads must start over.
			return fmt.Errorf("%w: it was created again (after %v)", ErrStreamLost, cause)
		}
		if err == nil {
			err = r.subscribe(ctx, cfg)
		}
		switch {
		case err == nil:
			if r.l.o.OnResume != nil {
				r.l.o.OnResume(r.filters, cause)
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrStreamLost), errors.Is(err, nats.ErrConnectionClosed):
			return fmt.Errorf("%w (after %v)", err, cause)
		}
		if !sleepCtx(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// close stops pulling and deletes the consumer.
func (r *reader) close() {
	r.endRound()
	if r.it != nil {
		r.it.Stop()
		r.it = nil
	}
	if r.cons != nil {
		r.l.release(r.cons)
		r.cons = nil
	}
}

// release deletes a consumer, briefly: the inactivity threshold removes
// it anyway, so a server that does not answer is not waited for.
func (l *jsLog) release(c jetstream.Consumer) {
	if info := c.CachedInfo(); info != nil {
		l.releaseName(info.Name)
	}
}

// releaseName deletes the reader's consumer name, if it exists.
func (l *jsLog) releaseName(name string) {
	if !l.js.Conn().IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.js.DeleteConsumer(ctx, Stream, name)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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
		if q.ToSeq > 0 {
			end = min(end, q.ToSeq)
		}
		if end == 0 || end < q.FromSeq {
			cancel()
			return
		}
		r, err := l.open(setup, q)
		cancel()
		if err != nil {
			yield(Event{}, err)
			return
		}
		if q.Decoders > 0 {
			l.readAhead(ctx, r, end, q, yield)
			return
		}
		defer r.close()
		err = r.each(ctx, end, func(msg jetstream.Msg, seq uint64) bool {
			ev, err := l.o.Registry.Decode(msg.Subject(), msg.Data())
			ev, ok := l.decoded(msg, seq, ev, err, q)
			return !ok || yield(ev, nil)
		})
		if err != nil {
			yield(Event{}, err)
		}
	}
}

// each calls fn with every message up to end, in order, until fn returns
// false. A broken consumer is made again from where the read was, as a
// follower's is; a lost stream ends the read with an error.
func (r *reader) each(ctx context.Context, end uint64, fn func(jetstream.Msg, uint64) bool) error {
	for {
		msg, seq, err := r.nextMsg(ctx)
		if err != nil && ctx.Err() == nil {
			err = r.resume(ctx, err)
			if err == nil {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("read: %w", translate(err))
		}
		if msg == nil {
			continue
		}
		if seq > end {
			// A filtered read whose last match before ToSeq came
			// earlier: the next match is past the end.
			return nil
		}
		if !fn(msg, seq) || seq >= end {
			return nil
		}
	}
}

// decoded is what a read yields for the message at seq that decoded to
// ev or failed with err: the event; or, for a message that is not a valid
// event (counted and reported), a placeholder when q.Skips asks for one.
// ok is false when there is nothing to yield.
func (l *jsLog) decoded(msg jetstream.Msg, seq uint64, ev Event, err error, q Query) (Event, bool) {
	if err == nil {
		ev.Seq = seq
		return ev, true
	}
	l.skip(msg.Subject(), seq, err)
	if q.Skips && seq != 0 {
		return Event{Seq: seq, NATSSubject: msg.Subject()}, true
	}
	return Event{}, false
}

// decodeBatch is how many messages a read with Query.Decoders decodes
// as one piece of work.
const decodeBatch = 128

// decodeJob is a batch of messages of a read ahead (readAhead), decoded
// by one goroutine; done is closed once evs and errs are filled. err, on
// the last job, is why the read ended.
type decodeJob struct {
	msgs []jetstream.Msg
	seqs []uint64
	evs  []Event
	errs []error
	err  error
	done chan struct{}
}

// readAhead is Read with Query.Decoders: one goroutine pulls the messages
// (it owns r), q.Decoders goroutines decode them a batch each, and this
// one yields the events in the log's order, as they are ready. Decoding
// was most of a rebuild's reading goroutine, which the fold waited on.
// Skipped messages are counted and reported here, in order, as Read
// does. It returns once every goroutine it started has ended.
func (l *jsLog) readAhead(ctx context.Context, r *reader, end uint64, q Query, yield func(Event, error) bool) {
	// quit says this goroutine stopped taking jobs (the caller broke off,
	// or the read ended); ctx then ends too, so the puller stops waiting
	// for the server. An end of the caller's ctx is an error to yield
	// like any other.
	quit := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	jobs := make(chan *decodeJob, q.Decoders+1) // in the log's order
	sem := make(chan struct{}, q.Decoders)
	var decoding sync.WaitGroup
	go func() {
		defer close(jobs)
		defer r.close()
		newJob := func() *decodeJob {
			return &decodeJob{msgs: make([]jetstream.Msg, 0, decodeBatch), seqs: make([]uint64, 0, decodeBatch), done: make(chan struct{})}
		}
		send := func(j *decodeJob) bool {
			select {
			case jobs <- j:
				return true
			case <-quit:
				return false
			}
		}
		j := newJob()
		decode := func() bool {
			select {
			case sem <- struct{}{}:
			case <-quit:
				return false
			}
			decoding.Add(1)
			go func(j *decodeJob) {
				defer decoding.Done()
				defer func() { <-sem }()
				j.evs, j.errs = make([]Event, len(j.msgs)), make([]error, len(j.msgs))
				for i, msg := range j.msgs {
					j.evs[i], j.errs[i] = l.o.Registry.Decode(msg.Subject(), msg.Data())
				}
				close(j.done)
			}(j)
			ok := send(j)
			j = newJob()
			return ok
		}
		err := r.each(ctx, end, func(msg jetstream.Msg, seq uint64) bool {
			j.msgs, j.seqs = append(j.msgs, msg), append(j.seqs, seq)
			return len(j.msgs) < decodeBatch || decode()
		})
		if len(j.msgs) > 0 && !decode() {
			return
		}
		if err != nil {
			j.err = err
			close(j.done)
			send(j)
		}
	}()
	defer func() {
		// Stopped early, or done: the puller ends, and every job it
		// handed on is waited for, so no goroutine outlives Read.
		close(quit)
		cancel()
		for j := range jobs {
			<-j.done
		}
		decoding.Wait()
	}()
	for j := range jobs {
		<-j.done
		for i, msg := range j.msgs {
			ev, ok := l.decoded(msg, j.seqs[i], j.evs[i], j.errs[i], q)
			if ok && !yield(ev, nil) {
				return
			}
		}
		if j.err != nil {
			yield(Event{}, j.err)
			return
		}
	}
}

// Follower is a live subscription to the log. Events arrive in stream
// order on Events until Stop is called, the context ends, or the stream
// is lost.
type Follower struct {
	events chan Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

// Events delivers decoded events. It is closed when the follower stops.
func (f *Follower) Events() <-chan Event { return f.events }

// Buffered is how many events wait in Events, not yet received.
func (f *Follower) Buffered() int { return len(f.events) }

// Done is closed once the follower has stopped.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Err is why the follower stopped: nil after Stop or context end; an
// error wrapping ErrStreamLost when the stream went away.
func (f *Follower) Err() error {
	<-f.done
	return f.err
}

// Stop ends the subscription and waits for it. It is idempotent, and it
// returns promptly whatever the subscription is doing: every wait inside
// ends with the follower's context (deleting the server-side consumer is
// bounded to a second, and skipped without a connection).
func (f *Follower) Stop() {
	f.once.Do(f.cancel)
	<-f.done
}

func (l *jsLog) Follow(ctx context.Context, q Query) (*Follower, error) {
	setup, cancelSetup := withDefaultTimeout(ctx, l.o.Timeout)
	r, err := l.open(setup, q)
	cancelSetup()
	if err != nil {
		return nil, err
	}
	if q.Buffer <= 0 {
		q.Buffer = 256
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{events: make(chan Event, q.Buffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.events)
		defer r.close()
		for {
			msg, seq, err := r.nextMsg(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				// The consumer broke (deleted with its stream, lost with a
				// cluster member, heartbeats missed, a delivery skipped):
				// read again from where it was.
				if rerr := r.resume(ctx, err); rerr != nil {
					if ctx.Err() == nil {
						f.err = fmt.Errorf("follow: %w", rerr)
					}
					return
				}
				continue
			}
			if msg == nil {
				continue
			}
			ev, ok := l.decode(msg, seq)
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
