package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/leadshim"
)

// nullTurns times n null turns: a turn's hops with no work behind them,
// chained as a turn chains them and timed as the fabric row times a turn.
// The lead POSTs a message to a handler in the gateway's process, which
// appends a queued stand-in to the log; a consumer (the bridge's part)
// has it, calls herdr (ping, for the screen read) and appends a typed
// stand-in; span later (the agent's part) a replied stand-in is
// appended, and a second consumer (the projection's part) has it and
// wakes the handler, which answers. Each starts span after the last, as
// the sim turns come after a floor turn. The overhead is the whole
// minus typed stored → replied stored, the fabric row's own measure, so
// fleetd's overhead over it is what fleetd's work adds to the same hops
// at the same moments: its checks, encodings, folds, waits and the
// ordering of its goroutines. The stand-ins are status events of agents
// no gateway owns (bench-null-…), as the raw log hop's are.
func (r *fabricRun) nullTurns(ctx context.Context, js jetstream.JetStream, n int, span time.Duration) (nullSet, error) {
	var ns nullSet
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return ns, fmt.Errorf("null turns: %w", err)
	}
	queued, typed, replied := newRawMsg("bench-null-q"), newRawMsg("bench-null-t"), newRawMsg("bench-null-r")
	consume := func(subjects []string, fn func(jetstream.Msg)) (jetstream.ConsumeContext, error) {
		c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: subjects, DeliverPolicy: jetstream.DeliverNewPolicy})
		if err != nil {
			return nil, err
		}
		return c.Consume(fn)
	}
	// times carries each turn's queued, typed and replied stored times
	// to its handler, which answers once it has them.
	times := make(chan [3]time.Time, 1)
	fail := make(chan error, 1)
	failed := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	// i is the turn under way; each reads it after the POST that follows
	// its write.
	var i atomic.Int64
	// queuedAt is the turn's queued stored time, which the bridge's
	// consumer has and the views' consumer sends on.
	var queuedAt atomic.Int64
	bridge, err := consume([]string{queued.subject}, func(m jetstream.Msg) {
		if md, err := m.Metadata(); err == nil {
			queuedAt.Store(md.Timestamp.UnixNano())
		}
		if _, err := r.herdr.Ping(ctx); err != nil {
			failed(err)
			return
		}
		if _, err := js.PublishMsg(ctx, typed.msg(int(i.Load()))); err != nil {
			failed(err)
			return
		}
		sleep(ctx, span)
		if _, err := js.PublishMsg(ctx, replied.msg(int(i.Load()))); err != nil {
			failed(err)
		}
	})
	if err != nil {
		return ns, fmt.Errorf("null turns: %w", err)
	}
	defer bridge.Stop()
	var typedAt time.Time
	views, err := consume([]string{typed.subject, replied.subject}, func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			failed(err)
			return
		}
		if m.Subject() == typed.subject {
			typedAt = md.Timestamp
			return
		}
		times <- [3]time.Time{time.Unix(0, queuedAt.Load()), typedAt, md.Timestamp}
	})
	if err != nil {
		return ns, fmt.Errorf("null turns: %w", err)
	}
	defer views.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ns, fmt.Errorf("null turns: %w", err)
	}
	stored := make(chan [3]time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := js.PublishMsg(req.Context(), queued.msg(int(i.Load()))); err != nil {
			failed(err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		select {
		case at := <-times:
			stored <- at
		case <-req.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"replied"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/message"
	for k := range n {
		i.Store(int64(k))
		sleep(ctx, span)
		t0, t1, err := r.lead.post(ctx, url, leadshim.Message{To: "bench-null", Text: fmt.Sprintf("null turn %d: say hello", k+1), Timeout: "2m"})
		if err != nil {
			return ns, fmt.Errorf("null turns: %w", err)
		}
		select {
		case at := <-stored:
			ns.whole = append(ns.whole, t1.Sub(t0)-at[2].Sub(at[1]))
			ns.admit = append(ns.admit, at[0].Sub(t0))
			ns.dispatch = append(ns.dispatch, at[1].Sub(at[0]))
			ns.completion = append(ns.completion, t1.Sub(at[2]))
		case err := <-fail:
			return ns, fmt.Errorf("null turns: %w", err)
		case <-ctx.Done():
			return ns, ctx.Err()
		}
	}
	return ns, nil
}

// nullSet is the null turns' overhead and its parts, each as the fabric
// row's (turnSet): admit (POST → queued stored), dispatch (queued →
// typed stored) and completion (replied stored → the lead has the
// answer), so fleetd's excess can be found part by part.
type nullSet struct {
	whole, admit, dispatch, completion Sample
}
