package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
)

// RoundTrip measures n raw JetStream log hops in-process: publish one
// event (waiting for its ack, as every append does) and time until an
// ordered consumer on its subject has delivered it. It is the floor of
// each hop a turn takes through the log. gap is the pause before each
// hop: 0 measures them back to back, with every goroutine on the way
// still running; a turn's hops come after a pause, and each wakes them.
func RoundTrip(ctx context.Context, js jetstream.JetStream, n int, gap time.Duration) (Sample, error) {
	r := newRawMsg("bench-rt")
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{r.subject}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	got := make(chan time.Time, 1)
	cc, err := c.Consume(func(m jetstream.Msg) {
		got <- time.Now()
	})
	if err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	defer cc.Stop()
	var s Sample
	for i := range n {
		if gap > 0 {
			sleep(ctx, gap)
		}
		start := time.Now()
		if _, err := js.PublishMsg(ctx, r.msg(i)); err != nil {
			return nil, fmt.Errorf("round trip: %w", err)
		}
		select {
		case at := <-got:
			s = append(s, at.Sub(start))
		case <-time.After(10 * time.Second):
			return nil, errors.New("round trip: no delivery in 10s")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s, nil
}
