package natsauth_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
)

func TestAnAgentCannotPublishAnotherAgentsEvents(t *testing.T) {
	dir := t.TempDir()
	ids, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h1": {"w-1", "w-2"}, "h2": {"w-3"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.Write(dir, ids); err != nil {
		t.Fatal(err)
	}
	adminSeed, err := natsauth.ConnectOption(filepath.Join(dir, "admin.nk"))
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t, natstest.WithTCP(), natstest.WithClientOptions(adminSeed), natstest.WithConfig(func(c *embeddednats.Config) {
		c.ConfigFile = filepath.Join(dir, "server.conf")
	}))
	ajs := srv.JS
	if _, err := events.EnsureStream(context.Background(), ajs, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var violations []string
	agent := connect(t, srv.ClientURL(), filepath.Join(dir, "agent-w-1.nk"), func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		defer mu.Unlock()
		violations = append(violations, err.Error())
	})
	js, _ := jetstream.New(agent)
	log := events.New(js, events.Options{Timeout: 2 * time.Second})
	ctx := context.Background()

	if _, err := log.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}); err != nil {
		t.Fatalf("agent w-1 appending its own event: %v", err)
	}
	_, err = log.Append(ctx, events.Event{Subject: "w-2", Data: events.AgentReplied{Reply: "forged"}})
	if err == nil {
		t.Fatal("agent w-1 appended an event for w-2")
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range violations {
			if strings.Contains(v, "Permissions Violation") && strings.Contains(v, "fleet.agent.w-2.replied") {
				return true
			}
		}
		return false
	})
	// Nothing forged reached the log.
	alog := events.New(ajs, events.Options{})
	for ev, err := range alog.Read(ctx, events.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Subject == "w-2" {
			t.Errorf("forged event stored: %+v", ev)
		}
	}

	// A gateway may queue for any agent but not speak for another host's agent.
	gw := connect(t, srv.ClientURL(), filepath.Join(dir, "gateway-h1.nk"), nil)
	gjs, _ := jetstream.New(gw)
	glog := events.New(gjs, events.Options{Timeout: 2 * time.Second})
	if _, err := glog.Append(ctx, events.Event{Subject: "w-3", Data: events.AgentQueued{Text: "cross-host turn"}}); err != nil {
		t.Errorf("gateway h1 queueing for w-3 on h2: %v", err)
	}
	if _, err := glog.Append(ctx, events.Event{Subject: "w-3", Data: events.AgentTyped{Pane: "x"}}); err == nil {
		t.Error("gateway h1 typed for w-3, an agent of h2")
	}
	if _, err := glog.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentTyped{Pane: "x"}}); err != nil {
		t.Errorf("gateway h1 typing for its own w-1: %v", err)
	}
}

func TestFleetValidation(t *testing.T) {
	_, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h.1": {"W1"}, "h2": {"w-1"}, "h3": {"w-1"}}})
	if err == nil {
		t.Fatal("invalid fleet accepted")
	}
	for _, want := range []string{"h.1", "W1", "w-1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func connect(t *testing.T, url, seed string, onErr nats.ErrHandler) *nats.Conn {
	t.Helper()
	opt, err := natsauth.ConnectOption(seed)
	if err != nil {
		t.Fatal(err)
	}
	opts := []nats.Option{opt}
	if onErr != nil {
		opts = append(opts, nats.ErrorHandler(onErr))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect with %s: %v", filepath.Base(seed), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func waitFor(t *testing.T, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pane gets its agent's own file from beside its gateway's, never the
// gateway's, and nothing for an agent without one.
func TestAgentCredsAreTheAgentsOwnFileBesideTheGateways(t *testing.T) {
	dir := t.TempDir()
	ids, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h1": {"w-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.Write(dir, ids); err != nil {
		t.Fatal(err)
	}
	gw := filepath.Join(dir, "gateway-h1.nk")
	if got, want := natsauth.AgentCreds(gw, "w-1"), filepath.Join(dir, "agent-w-1.nk"); got != want {
		t.Errorf("AgentCreds(gateway, w-1) = %q, want %q", got, want)
	}
	for _, c := range []struct{ creds, agent string }{
		{gw, "w-2"},                             // no file for it
		{gw, "../admin"},                        // not an agent id
		{filepath.Join(dir, "admin.nk"), "w-1"}, // not a gateway's file
		{filepath.Join(dir, "agent-w-1.nk"), "w-1"},
	} {
		if got := natsauth.AgentCreds(c.creds, c.agent); got != "" {
			t.Errorf("AgentCreds(%s, %s) = %q, want none", filepath.Base(c.creds), c.agent, got)
		}
	}
}
