package eventcore

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

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
	// ToSeq, when set, ends a Read after this stream sequence (inclusive):
	// the log as it stood then, for a view of the past (Log.SeqAt turns a
	// time into one). Follow ignores it.
	ToSeq uint64
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
	// Decoders, for a Read of a long stretch (a rebuild), decodes the
	// events on that many goroutines, a batch each, beside the one that
	// pulls them from the server; Read still yields them in order. 0
	// decodes each as it is pulled. Follow ignores it.
	Decoders int
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

// Expected is what opts ask of an append: the last sequence expected
// (ok false: none) of the event's own subject, or of filter when it is
// not empty. A Log sets them as JetStream's expected-sequence headers.
func Expected(opts ...AppendOption) (seq uint64, filter string, ok bool) {
	var ao appendOpts
	for _, o := range opts {
		o(&ao)
	}
	if ao.expect == nil {
		return 0, "", false
	}
	return *ao.expect, ao.expectFor, true
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
