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

// nullRunner times null turns: a turn's hops with no work behind them,
// chained as a turn chains them and timed as the fabric row times a turn.
// The lead POSTs a message to a handler in the gateway's process, which
// appends a queued stand-in to the log; a consumer (the bridge's part)
// has it, calls herdr (ping, for the screen read) and appends a typed
// stand-in; span later (the agent's part) a replied stand-in is
// appended, and a second consumer (the projection's part) has it and
// wakes the handler, which answers. The overhead is the whole minus
// typed stored → replied stored, the fabric row's own measure, so
// fleetd's overhead over it is what fleetd's work adds to the same hops
// at the same moments: its checks, encodings, folds, waits and the
// ordering of its goroutines. The stand-ins are status events of agents
// no gateway owns (bench-null-…), as the raw log hop's are.
//
// The null turns run between the sim agent's turns (turns), each after
// the turn it stands beside and as long a span, so both see the machine
// as it is at that moment: run after all of them, a run's null turns and
// its turns were apart by a minute of other work, and the difference of
// their medians moved by a few tenths of a millisecond between runs.
type nullRunner struct {
	r      *fabricRun
	views  jetstream.ConsumeContext
	bridge jetstream.ConsumeContext
	srv    *http.Server
	url    string
	// i is the turn under way and span its agent's span (nanoseconds);
	// the consumers read them after the POST that follows their write.
	i, span atomic.Int64
	stored  chan [3]time.Time
	fail    chan error
	set     nullSet
}

// nullSet is the null turns' overhead and its parts, each as the fabric
// row's (turnSet): admit (POST → queued stored), dispatch (queued →
// typed stored) and completion (replied stored → the lead has the
// answer), so fleetd's excess can be found part by part.
type nullSet struct {
	whole, admit, dispatch, completion Sample
}

// startNull sets up the null turns' handler and consumers.
func (r *fabricRun) startNull(ctx context.Context, js jetstream.JetStream) (_ *nullRunner, err error) {
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("null turns: %w", err)
	}
	n := &nullRunner{r: r, stored: make(chan [3]time.Time, 1), fail: make(chan error, 1)}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
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
	// queuedAt is the turn's queued stored time, which the bridge's
	// consumer has and the views' consumer sends on.
	var queuedAt atomic.Int64
	n.bridge, err = consume([]string{queued.subject}, func(m jetstream.Msg) {
		if md, err := m.Metadata(); err == nil {
			queuedAt.Store(md.Timestamp.UnixNano())
		}
		if _, err := r.herdr.Ping(ctx); err != nil {
			n.failed(err)
			return
		}
		if _, err := js.PublishMsg(ctx, typed.msg(int(n.i.Load()))); err != nil {
			n.failed(err)
			return
		}
		sleep(ctx, time.Duration(n.span.Load()))
		if _, err := js.PublishMsg(ctx, replied.msg(int(n.i.Load()))); err != nil {
			n.failed(err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("null turns: %w", err)
	}
	var typedAt time.Time
	n.views, err = consume([]string{typed.subject, replied.subject}, func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			n.failed(err)
			return
		}
		if m.Subject() == typed.subject {
			typedAt = md.Timestamp
			return
		}
		times <- [3]time.Time{time.Unix(0, queuedAt.Load()), typedAt, md.Timestamp}
	})
	if err != nil {
		return nil, fmt.Errorf("null turns: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("null turns: %w", err)
	}
	n.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := js.PublishMsg(req.Context(), queued.msg(int(n.i.Load()))); err != nil {
			n.failed(err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		select {
		case at := <-times:
			n.stored <- at
		case <-req.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"replied"}`))
	})}
	go func() { _ = n.srv.Serve(ln) }()
	n.url = "http://" + ln.Addr().String() + "/message"
	return n, nil
}

func (n *nullRunner) failed(err error) {
	select {
	case n.fail <- err:
	default:
	}
}

// turn times one null turn, span after the last thing done (as a turn
// comes after the lead waited out the one before) and with an agent span
// as long.
func (n *nullRunner) turn(ctx context.Context, span time.Duration) error {
	k := len(n.set.whole)
	n.i.Store(int64(k))
	n.span.Store(int64(span))
	sleep(ctx, span)
	t0, t1, err := n.r.lead.post(ctx, n.url, leadshim.Message{To: "bench-null", Text: fmt.Sprintf("null turn %d: say hello", k+1), Timeout: "2m"})
	if err != nil {
		return fmt.Errorf("null turn: %w", err)
	}
	select {
	case at := <-n.stored:
		n.set.whole = append(n.set.whole, t1.Sub(t0)-at[2].Sub(at[1]))
		n.set.admit = append(n.set.admit, at[0].Sub(t0))
		n.set.dispatch = append(n.set.dispatch, at[1].Sub(at[0]))
		n.set.completion = append(n.set.completion, t1.Sub(at[2]))
		return nil
	case err := <-n.fail:
		return fmt.Errorf("null turn: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *nullRunner) close() {
	if n.bridge != nil {
		n.bridge.Stop()
	}
	if n.views != nil {
		n.views.Stop()
	}
	if n.srv != nil {
		n.srv.Close()
	}
}
