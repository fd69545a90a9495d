package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// bigFrame is the size past which a view's updates are spaced 4×Batch:
// a fleet of hundreds of agents is re-sent less often, not less
// completely.
const bigFrame = 256 << 10

// pingEvery keeps a quiet stream's connection from looking dead to
// proxies.
const pingEvery = 15 * time.Second

// stream serves a view as server-sent events: "view" carries the whole
// fragment (on connect and whenever it changed, at most once per Batch),
// "rows" new log rows to put on top, "end" that a view of the past is
// complete (the page then closes the stream), "problem" what went wrong.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	sp, err := parseSpec(r.URL.Query(), s.cfg.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if n := s.streams.Add(1); n > int64(s.cfg.MaxStreams) {
		s.streams.Add(-1)
		s.refused.Add(1)
		writeError(w, http.StatusTooManyRequests, "too_many_streams",
			fmt.Sprintf("%d dashboard streams are open, the most this fleetd serves; close a tab or try again later", s.cfg.MaxStreams))
		return
	}
	defer s.streams.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	out := &sse{w: w, rc: http.NewResponseController(w), timeout: s.cfg.WriteTimeout, dropped: &s.dropped}
	w.WriteHeader(http.StatusOK)
	if !out.write([]byte(": fleetd dashboard\n\n")) {
		return
	}
	ctx := r.Context()
	if !sp.At.Live() {
		if b, err := s.render(ctx, sp); err != nil {
			out.send("problem", []byte(err.Error()))
		} else {
			out.send("view", b)
		}
		out.send("end", nil)
		return
	}
	switch sp.View {
	case ViewLog:
		err = s.liveLog(ctx, sp, out)
	case ViewJobs:
		err = s.liveJobs(ctx, sp, out)
	case ViewCost:
		err = s.liveCost(ctx, sp, out)
	default:
		err = s.liveFold(ctx, sp, out)
	}
	if err != nil && !errors.Is(err, errGone) && ctx.Err() == nil {
		out.send("problem", []byte(err.Error()))
	}
}

// errGone ends a stream whose reader is gone (or was dropped).
var errGone = errors.New("dashboard: the stream's reader is gone")

// sse writes one stream's frames, each within a deadline.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	dropped interface{ Add(uint64) uint64 }
	last    []byte // the last "view" sent, to skip an identical one
}

// send writes one event; data's lines each become a data: line.
func (o *sse) send(event string, data []byte) bool {
	var b bytes.Buffer
	b.WriteString("event: " + event + "\n")
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(line, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return o.write(b.Bytes())
}

// view sends a view's fragment unless it is the one sent last.
func (o *sse) view(b []byte) bool {
	if bytes.Equal(b, o.last) {
		return true
	}
	o.last = b
	return o.send("view", b)
}

// ping sends a comment frame, so that a quiet stream's connection does
// not look dead.
func (o *sse) ping() bool { return o.write([]byte(": ping\n\n")) }

// write sends a frame within the write timeout, or gives the reader up.
func (o *sse) write(frame []byte) bool {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	_, err := o.w.Write(frame)
	if err == nil {
		err = o.rc.Flush()
	}
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			o.dropped.Add(1)
		}
		return false
	}
	_ = o.rc.SetWriteDeadline(time.Time{})
	return true
}

// pacer spaces a stream's updates: at most one per Batch, one per 4×Batch
// after a big frame.
type pacer struct {
	batch time.Duration
	next  time.Time
	dirty bool
}

// due reports whether a pending change may be sent now.
func (p *pacer) due(now time.Time) bool { return p.dirty && !now.Before(p.next) }

// sent records a frame of n bytes sent at now.
func (p *pacer) sent(now time.Time, n int) {
	p.dirty = false
	wait := p.batch
	if n > bigFrame {
		wait = 4 * p.batch
	}
	p.next = now.Add(wait)
}

// show renders a view, sends it unless it is the one sent last, and
// records it sent; errGone when the reader is gone.
func (p *pacer) show(out *sse, render func() ([]byte, error)) error {
	b, err := render()
	if err != nil {
		return err
	}
	if !out.view(b) {
		return errGone
	}
	p.sent(time.Now(), len(b))
	return nil
}

// relevant says whether a change can alter view sp.
func relevant(sp spec, c projections.Change) bool {
	switch sp.View {
	case ViewFleet:
		return c.Kind == projections.KindAgent
	case ViewTurns:
		return c.Kind == projections.KindTurn
	case ViewTurn:
		return c.Kind == projections.KindTurn && c.Key == sp.ID
	case ViewAgent:
		return c.Kind == projections.KindAgent && c.Key == sp.ID
	}
	return true
}

// liveFold keeps a view of the fold (fleet, turns, a turn, an agent)
// current: it renders again when the projection changes what the view
// shows, and the fleet view every Refresh besides (heartbeat ages).
func (s *Server) liveFold(ctx context.Context, sp spec, out *sse) error {
	changes, cancel := s.cfg.Fleet.Subscribe()
	defer cancel()
	p := &pacer{batch: s.cfg.Batch, dirty: true}
	render := func() ([]byte, error) { return s.render(ctx, sp) }
	if err := p.show(out, render); err != nil {
		return err
	}
	refreshed := time.Now()
	return pump(ctx, out, s.cfg.Batch, changes, nil, func(c projections.Change) {
		if relevant(sp, c) {
			p.dirty = true
		}
	}, func(now time.Time) error {
		if sp.View == ViewFleet && now.Sub(refreshed) >= s.cfg.Refresh {
			p.dirty, refreshed = true, now
		}
		if p.due(now) {
			return p.show(out, render)
		}
		return nil
	})
}

// follow tails subject from seq on, for a live view of the log.
func (s *Server) follow(ctx context.Context, from uint64, subjects ...string) (*events.Follower, error) {
	return s.cfg.Log.Follow(ctx, events.Query{Subjects: subjects, FromSeq: from, Prefetch: 64, Buffer: 64})
}

// liveLog shows the newest events, then puts new ones on top as they
// come, at most LogRows a batch (the page keeps LogRows in all).
func (s *Server) liveLog(ctx context.Context, sp spec, out *sse) error {
	src := source{views: s.cfg.Fleet, now: s.cfg.Now()}
	m, end, err := s.logPage(ctx, src, sp.Subject)
	if err != nil {
		return err
	}
	b, err := s.exec(sp, src, m)
	if err != nil {
		return err
	}
	if !out.view(b) {
		return nil
	}
	var pending []events.Event
	keep := func(ev events.Event) {
		pending = append(pending, ev)
		if len(pending) > 2*s.cfg.LogRows {
			pending = pending[len(pending)-s.cfg.LogRows:]
		}
	}
	return s.tail(ctx, out, []string{sp.Subject}, end+1, keep, func(time.Time) error {
		if len(pending) == 0 {
			return nil
		}
		if n := len(pending); n > s.cfg.LogRows {
			pending = pending[n-s.cfg.LogRows:]
		}
		rows := make([]logRow, len(pending))
		for i, ev := range pending {
			rows[len(pending)-1-i] = s.logRow(ev)
		}
		pending = pending[:0]
		var b bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&b, "log-rows", rows); err != nil {
			return err
		}
		if !out.send("rows", b.Bytes()) {
			return errGone
		}
		return nil
	})
}

// liveJobs shows the jobs view from the Server's one live job board
// (jobHub), and again whenever a job event changed what it shows. An
// idle stream waits on its subscription alone, and a ping.
func (s *Server) liveJobs(ctx context.Context, sp spec, out *sse) error {
	h := s.jobHub()
	defer h.release()
	sub, err := h.subscribe(ctx, sp)
	if err != nil {
		return err
	}
	defer h.leave(sub)
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-sub.frames:
			if f.err != nil {
				return f.err
			}
			if !out.view(f.b) {
				return errGone
			}
		case <-h.done:
			return h.err
		case <-ping.C:
			if !out.ping() {
				return nil
			}
		}
	}
}

// liveCost sums the window's replies, then each new one, and shows the
// report again when it changed.
func (s *Server) liveCost(ctx context.Context, sp spec, out *sse) error {
	c, err := s.cost(ctx, source{views: s.cfg.Fleet, now: s.cfg.Now()}, sp.By, sp.Since)
	if err != nil {
		return err
	}
	return s.liveLogView(ctx, sp, out, costSubjects, c.seq, func(ev events.Event) { c.add(ctx, ev) },
		func() any { return c.done() })
}

// liveLogView renders a view built from events of subjects up to end,
// then applies each later event and renders again, paced.
func (s *Server) liveLogView(ctx context.Context, sp spec, out *sse, subjects []string, end uint64, apply func(events.Event), model func() any) error {
	p := &pacer{batch: s.cfg.Batch, dirty: true}
	render := func() ([]byte, error) {
		return s.exec(sp, source{views: s.cfg.Fleet, now: s.cfg.Now()}, model())
	}
	if err := p.show(out, render); err != nil {
		return err
	}
	return s.tail(ctx, out, subjects, end+1, func(ev events.Event) {
		apply(ev)
		p.dirty = true
	}, func(now time.Time) error {
		if p.due(now) {
			return p.show(out, render)
		}
		return nil
	})
}

// tail follows subjects from seq from on and serves a live stream of its
// events (see pump); it ends with the follower's error when that fails.
func (s *Server) tail(ctx context.Context, out *sse, subjects []string, from uint64, onEvent func(events.Event), onTick func(time.Time) error) error {
	f, err := s.follow(ctx, from, subjects...)
	if err != nil {
		return err
	}
	defer f.Stop()
	return pump(ctx, out, s.cfg.Batch, f.Events(), f.Err, onEvent, onTick)
}

// pump serves a live stream of what comes on in: each value to onValue
// as it comes, onTick every batch (to send what the values changed,
// paced), a ping every pingEvery. It ends when ctx does or the reader is
// gone (nil), when in is closed (closed's error, or nil when closed is
// nil), or when onTick fails (its error: errGone when the reader went
// while it was sent to, which stream does not report).
func pump[T any](ctx context.Context, out *sse, batch time.Duration, in <-chan T, closed func() error, onValue func(T), onTick func(time.Time) error) error {
	tick := time.NewTicker(batch)
	defer tick.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case v, ok := <-in:
			if !ok {
				if closed == nil {
					return nil
				}
				return closed()
			}
			onValue(v)
		case <-ping.C:
			if !out.ping() {
				return nil
			}
		case now := <-tick.C:
			if err := onTick(now); err != nil {
				return err
			}
		}
	}
}
