package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetd/fleetd/events"
)

// jobHub is the live job board every live Jobs stream of one Server
// shares: one fold of every job event and one follower of fleet.job.>,
// where each stream used to read every job event on connect, keep its
// own board and follower, and wake every Batch (issue H8, 9). A change
// is rendered once per distinct view (a jobGroup) and handed only to the
// streams of a view whose fragment it changed; a burst is coalesced into
// one rendering per Batch; nothing wakes while nothing changes.
//
// It lives while a stream uses it: the first stream starts it, the last
// one to leave stops it and waits for its goroutine, so a Server with no
// live Jobs stream holds no follower and no goroutine.
type jobHub struct {
	s      *Server
	cancel context.CancelFunc
	// ready is closed once the board is loaded, loadErr set if it was
	// not; done once run has returned, err set to why when it failed.
	ready, done  chan struct{}
	loadErr, err error
	// refs counts the streams holding the hub; guarded by jobHubs.mu.
	refs int
	// renders counts the fragments rendered, for the tests.
	renders atomic.Uint64

	mu     sync.Mutex
	board  *board
	groups map[string]*jobGroup // by the view's query
}

// jobGroup is the live streams showing one view of the jobs: one
// rendering serves them all.
type jobGroup struct {
	sp   spec
	last []byte // the fragment the streams were last given
	subs map[*jobSub]struct{}
}

// jobSub is one stream's place in the hub. frames holds at most the
// newest frame not yet sent: the hub never waits for a stream, and a
// slow one skips to the latest view.
type jobSub struct {
	group  *jobGroup
	frames chan jobFrame
}

// jobFrame is a view's fragment, or why it could not be rendered.
type jobFrame struct {
	b   []byte
	err error
}

// offer replaces the frame waiting for the stream, if any, with f. Only
// the hub sends, under its mu, so the loop ends in at most two rounds.
func (s *jobSub) offer(f jobFrame) {
	for {
		select {
		case s.frames <- f:
			return
		default:
		}
		select {
		case <-s.frames:
		default:
		}
	}
}

// jobHubs holds each Server's hub while a stream uses it. It is keyed by
// Server rather than being one of its fields only because server.go is
// being changed by someone else as this is written; an entry never
// outlives its streams.
var jobHubs = struct {
	mu sync.Mutex
	m  map[*Server]*jobHub
}{m: map[*Server]*jobHub{}}

// jobHub returns s's hub, started if it was not, with one more holder:
// the caller must call leave.
func (s *Server) jobHub() *jobHub {
	jobHubs.mu.Lock()
	defer jobHubs.mu.Unlock()
	h := jobHubs.m[s]
	if h == nil {
		// Its own context: the hub outlives the request that started it.
		ctx, cancel := context.WithCancel(context.Background())
		h = &jobHub{s: s, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{}), groups: map[string]*jobGroup{}}
		jobHubs.m[s] = h
		go h.run(ctx)
	}
	h.refs++
	return h
}

// release drops one holder; the last stops the hub and waits for it.
func (h *jobHub) release() {
	jobHubs.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last && jobHubs.m[h.s] == h {
		delete(jobHubs.m, h.s)
	}
	jobHubs.mu.Unlock()
	if last {
		h.cancel()
		<-h.done
	}
}

// forget takes a failed hub out of the registry, so that the next
// stream starts a new one; its streams end with its error.
func (h *jobHub) forget() {
	jobHubs.mu.Lock()
	if jobHubs.m[h.s] == h {
		delete(jobHubs.m, h.s)
	}
	jobHubs.mu.Unlock()
}

// subscribe joins the streams of view sp, once the board is loaded; its
// first frame waits in the subscription. The caller must call leave.
func (h *jobHub) subscribe(ctx context.Context, sp spec) (*jobSub, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if h.loadErr != nil {
		return nil, h.loadErr
	}
	// Streams whose queries are the same render the same fragment (the
	// view's links keep its query's point).
	key := sp.raw.Encode()
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.groups[key]
	if g == nil {
		b, err := h.render(sp)
		if err != nil {
			return nil, err
		}
		g = &jobGroup{sp: sp, last: b, subs: map[*jobSub]struct{}{}}
		h.groups[key] = g
	}
	sub := &jobSub{group: g, frames: make(chan jobFrame, 1)}
	g.subs[sub] = struct{}{}
	// The group's last fragment is the board as it is now, or a
	// rendering of it is already due.
	sub.offer(jobFrame{b: g.last})
	return sub, nil
}

// leave takes sub out of its group, and the group out of the hub when it
// was the last.
func (h *jobHub) leave(sub *jobSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(sub.group.subs, sub)
	if len(sub.group.subs) == 0 {
		delete(h.groups, sub.group.sp.raw.Encode())
	}
}

// render renders view sp of the board; the caller holds mu.
func (h *jobHub) render(sp spec) ([]byte, error) {
	h.renders.Add(1)
	s := h.s
	return s.exec(sp, source{views: s.cfg.Fleet, now: s.cfg.Now()}, s.jobsModel(h.board, sp.ID))
}

// load folds every job event there is into the board and follows those
// that come after.
func (h *jobHub) load(ctx context.Context) (*events.Follower, error) {
	s := h.s
	end, err := s.cfg.Log.LastSeq(ctx, "fleet.job.>")
	if err != nil {
		return nil, err
	}
	b := newBoard()
	if end > 0 {
		if b, err = s.loadBoardTo(ctx, end); err != nil {
			return nil, err
		}
	}
	h.board = b
	return s.follow(ctx, end+1, "fleet.job.>")
}

// run loads the board, then folds each job event as it comes and, at
// most once per Batch, shows the streams what changed. It ends when its
// context does (the last stream left) or the follower fails.
func (h *jobHub) run(ctx context.Context) {
	defer close(h.done)
	fol, err := h.load(ctx)
	if err != nil {
		h.loadErr = err
		close(h.ready)
		h.forget()
		return
	}
	close(h.ready)
	defer fol.Stop()

	// One timer, armed only while a change waits to be shown: idle, the
	// hub sleeps on the follower alone.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var wake <-chan time.Time
	var next time.Time // before it, a change waits (the pacing of Batch)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fol.Events():
			if !ok {
				if ctx.Err() != nil {
					return
				}
				h.err = fol.Err()
				if h.err == nil {
					h.err = errors.New("the job follower ended")
				}
				h.err = fmt.Errorf("live jobs: %w", h.err)
				h.forget()
				return
			}
			h.mu.Lock()
			h.board.apply(ev)
			h.mu.Unlock()
			if wake == nil {
				timer.Reset(max(0, time.Until(next)))
				wake = timer.C
			}
		case <-wake:
			wake = nil
			next = h.publish()
		}
	}
}

// publish renders every group's view once and hands the fragment to the
// group's streams when it changed; it returns when the next may be
// shown: Batch on, 4×Batch after a big frame.
func (h *jobHub) publish() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	wait := h.s.cfg.Batch
	for _, g := range h.groups {
		b, err := h.render(g.sp)
		if err != nil {
			for sub := range g.subs {
				sub.offer(jobFrame{err: err})
			}
			continue
		}
		if len(b) > bigFrame {
			wait = 4 * h.s.cfg.Batch
		}
		if bytes.Equal(b, g.last) {
			continue // this view does not show what changed
		}
		g.last = b
		for sub := range g.subs {
			sub.offer(jobFrame{b: b})
		}
	}
	return time.Now().Add(wait)
}
