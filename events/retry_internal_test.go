package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/nats-io/nats.go"
)

// A read whose consumer cannot be made — the create request goes
// unanswered, as it does right after a cluster member died — keeps trying
// within its ctx, and says so through OnRetry with why and how long it
// has waited: at the first retry, then once per retryEvery, not at every
// attempt; then it ends with ctx's error.
func TestAReadThatCannotMakeItsConsumerSaysItIsWaiting(t *testing.T) {
	// Each attempt waits 2 s for its answer. With the spacing at 3 s, in
	// 7.5 s of trying the attempts fail at ~2, ~4 and ~6 s and the fourth
	// is cut short: OnRetry hears at ~2 s and ~6 s, not at ~4 s.
	defer func(every time.Duration) { retryEvery = every }(retryEvery)
	retryEvery = 3 * time.Second
	// A user who may do everything but make consumers: the server drops
	// the create request, so it goes unanswered.
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(`authorization { users = [ { user: u, password: p, permissions: {
		publish: { allow: [">"], deny: ["$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>"] } } } ] }`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t, natstest.WithConfig(func(c *embeddednats.Config) { c.ConfigFile = conf }),
		natstest.WithClientOptions(nats.UserInfo("u", "p"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})))
	if _, err := EnsureStream(context.Background(), srv.JS, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	type retry struct {
		filters []string
		waited  time.Duration
		err     error
	}
	var (
		mu      sync.Mutex
		retries []retry
	)
	log := New(srv.JS, Options{OnRetry: func(filters []string, waited time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		retries = append(retries, retry{filters, waited, err})
	}})
	if _, err := log.Append(context.Background(), Event{Subject: "a-1", Data: AgentQueued{Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 7800*time.Millisecond)
	defer cancel()
	var readErr error
	for _, err := range log.Read(ctx, Query{Subjects: []string{"fleet.agent.a-1.>"}}) {
		readErr = err
		break
	}
	if !errors.Is(readErr, context.DeadlineExceeded) {
		t.Errorf("the read ended with %v, want its ctx's deadline", readErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 2 {
		t.Fatalf("OnRetry heard %d times, want twice (the first retry, then one %s later): %+v", len(retries), retryEvery, retries)
	}
	for _, r := range retries {
		if !slices.Equal(r.filters, []string{"fleet.agent.a-1.>"}) || r.err == nil || !strings.Contains(r.err.Error(), "no answer to the consumer create within 2s") {
			t.Errorf("OnRetry(%v, %s, %v); want the read's subjects and that its create went unanswered", r.filters, r.waited, r.err)
		}
	}
	if first, second := retries[0].waited, retries[1].waited; first < time.Second || second-first < retryEvery {
		t.Errorf("OnRetry heard after %s and %s; want the first after an attempt's wait, the next %s or more later", first, second, retryEvery)
	}
}
