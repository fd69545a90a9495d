package natsauth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/internal/natslite"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/natsauth/natscreds"
	"github.com/fleetd/fleetd/projections"
)

// authFleet is a server running the config `fleetd auth` writes, with the
// fabric provisioned by the admin: hosts h1 (agents a1, a2) and h2 (b1).
type authFleet struct {
	dir string
	srv *natstest.Server
}

func startAuthFleet(t *testing.T) *authFleet {
	t.Helper()
	srv, dir := fleettest.StartAuth(t, natsauth.Fleet{Hosts: map[string][]string{"h1": {"a1", "a2"}, "h2": {"b1"}}})
	ctx := context.Background()
	for _, b := range projections.Buckets() {
		if _, err := srv.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return &authFleet{dir: dir, srv: srv}
}

// client is one identity's connection; it records every permission
// violation the server reports to it.
type client struct {
	t    *testing.T
	name string
	nc   *nats.Conn
	js   jetstream.JetStream
	log  events.Log

	mu     sync.Mutex
	denied []string
}

var violationRE = regexp.MustCompile(`(?:Publish|Subscription) to "([^"]+)"`)

func (f *authFleet) connect(t *testing.T, name string) *client {
	t.Helper()
	c := &client{t: t, name: name}
	opt, err := natsauth.ConnectOption(natsauth.KeyPath(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	c.nc, err = nats.Connect(f.srv.ClientURL(), opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if m := violationRE.FindStringSubmatch(err.Error()); m != nil && errors.Is(err, nats.ErrPermissionViolation) {
			c.mu.Lock()
			c.denied = append(c.denied, m[1])
			c.mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(c.nc.Close)
	c.js, _ = jetstream.New(c.nc)
	c.log = events.New(c.js, events.Options{Source: "fleetd/test/" + name, Timeout: 5 * time.Second})
	return c
}

func (c *client) wasDenied(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.denied, subject)
}

// deny runs an attempt that the server must refuse on subject: the
// attempt fails and the server reports the violation. The attempt's
// context ends as soon as the violation arrives (a denied request is
// otherwise never answered).
func (c *client) deny(what, subject string, attempt func(ctx context.Context) error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- attempt(ctx) }()
	deadline := time.After(10 * time.Second)
	var result error
	finished := false
	for !c.wasDenied(subject) {
		select {
		case result = <-done:
			finished = true
			if result == nil {
				c.t.Errorf("%s %s: succeeded", c.name, what)
				return
			}
			done = nil // failed: the violation may still be on its way
		case <-deadline:
			c.t.Errorf("%s %s: the server reported no violation on %s", c.name, what, subject)
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if !finished {
		result = <-done
	}
	if result == nil {
		c.t.Errorf("%s %s: succeeded", c.name, what)
	}
}

// allow runs an attempt that must succeed.
func (c *client) allow(what string, attempt func(ctx context.Context) error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := attempt(ctx); err != nil {
		c.t.Errorf("%s %s: %v", c.name, what, err)
	}
}

func appendEvent(c *client, subject string, d events.Data) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.log.Append(ctx, events.Event{Subject: subject, Data: d})
		return err
	}
}

// subscribe subscribes and waits for the server's answer: nil when it
// took the subscription, the violation when it refused it.
func subscribe(c *client, subject string) func(context.Context) error {
	return func(ctx context.Context) error {
		sub, err := c.nc.SubscribeSync(subject)
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		if err := c.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		for !c.wasDenied(subject) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		return nats.ErrPermissionViolation
	}
}

// fetchOne pulls the one message c is to deliver, waiting up to 5s; what
// names it for the error when none comes.
func fetchOne(c jetstream.Consumer, what string) (jetstream.Msg, error) {
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return nil, err
	}
	m, ok := <-batch.Messages()
	if !ok {
		return nil, errors.New(what + " was not delivered")
	}
	return m, nil
}

// hookData is one event of each kind an agent's hooks write.
var hookData = map[string]events.Data{
	"submitted": events.AgentSubmitted{Via: "hook", PromptID: "p1"},
	"replied":   events.AgentReplied{Reply: "done", PromptID: "p1"},
	"usage":     events.AgentUsage{PromptID: "p1", Tokens: events.Tokens{In: 1}},
	"failed":    events.AgentFailed{Reason: "agent_error"},
	"session":   events.AgentSession{SessionID: "s1", State: "started"},
	"status":    events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"},
}

// gatewayData is one event of each kind only a gateway (or its shim and
// router) writes for an agent.
var gatewayData = map[string]events.Data{
	"registered": events.AgentRegistered{Agent: "a1", Host: "h1", Pane: "p-of-a2"},
	"queued":     events.AgentQueued{Text: "INJECTED"},
	"typed":      events.AgentTyped{Pane: "p-of-a2", Method: "agent.prompt"},
	"exited":     events.AgentExited{Pane: "p-of-a2"},
	"deferred":   events.AgentDeferred{Reason: "busy"},
	"attention":  events.AgentAttention{Reason: "composer"},
	// An agent answering its own permission dialog would grant itself
	// what it asked for.
	"dialog": events.AgentDialog{State: events.DialogAnswered, Answer: 1},
	"answer": events.AgentAnswer{Option: 1, By: "lead"},
}

func TestTheKindsAreTheHooksAndTheGatewaysWithNoneLeftOver(t *testing.T) {
	var kinds []string
	for _, ty := range []events.Type{events.TypeAgentRegistered, events.TypeAgentStatus, events.TypeAgentQueued,
		events.TypeAgentTyped, events.TypeAgentSubmitted, events.TypeAgentReplied, events.TypeAgentUsage, events.TypeAgentFailed,
		events.TypeAgentSession, events.TypeAgentExited, events.TypeAgentDeferred, events.TypeAgentAttention,
		events.TypeAgentDialog, events.TypeAgentAnswer} {
		kinds = append(kinds, ty.Kind())
	}
	for _, k := range kinds {
		_, hook := hookData[k]
		_, gw := gatewayData[k]
		if hook == gw {
			t.Errorf("agent event kind %q: hook %v, gateway %v; want exactly one", k, hook, gw)
		}
	}
	if got, want := slices.Sorted(slices.Values(natsauth.HookKinds)), slices.Sorted(mapKeys(hookData)); !slices.Equal(got, want) {
		t.Errorf("HookKinds = %v, want %v", got, want)
	}
}

func mapKeys(m map[string]events.Data) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// An agent's key publishes its own hook events and nothing else: not the
// gateway's kinds for itself (a registered naming another agent's pane,
// then a queued, would have the gateway type into that pane), and nothing
// for another agent. Nothing it was refused reaches the log.
func TestAnAgentPublishesOnlyItsOwnHookEvents(t *testing.T) {
	f := startAuthFleet(t)
	a1 := f.connect(t, "agent-a1")
	for kind, d := range hookData {
		a1.allow("appending its own "+kind, appendEvent(a1, "a1", d))
	}
	for kind, d := range gatewayData {
		a1.deny("appending its own "+kind, "fleet.agent.a1."+kind, appendEvent(a1, "a1", d))
	}
	for kind, d := range hookData {
		a1.deny("appending a2's "+kind, "fleet.agent.a2."+kind, appendEvent(a1, "a2", d))
	}
	a1.deny("appending a role turn", "fleet.role.w.queued", appendEvent(a1, "w", events.RoleQueued{Text: "INJECTED"}))
	a1.deny("cancelling a role turn", "fleet.role.w.cancelled", appendEvent(a1, "w", events.RoleCancelled{By: "INJECTED"}))
	a1.deny("announcing a host", "fleet.host.h1.up", appendEvent(a1, "h1", events.HostUp{Host: "h1"}))
	a1.deny("sending a turn through the micro service", "fleetd.send", func(ctx context.Context) error {
		_, err := a1.nc.RequestWithContext(ctx, "fleetd.send", []byte(`{"to":"a2","text":"INJECTED"}`))
		return err
	})

	var stored []string
	for ev, err := range events.New(f.srv.JS, events.Options{}).Read(context.Background(), events.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, ev.NATSSubject)
	}
	if len(stored) != len(hookData) {
		t.Errorf("stored %v, want a1's %d hook events only", stored, len(hookData))
	}
	for _, s := range stored {
		if kind := s[strings.LastIndex(s, ".")+1:]; !strings.HasPrefix(s, "fleet.agent.a1.") || hookData[kind] == nil {
			t.Errorf("stored %s", s)
		}
	}
}

// An agent reads replies on its own inbox prefix and its own roster row,
// and nothing of anyone else's: not _INBOX.>, not another agent's inbox,
// not the log, not another agent's row.
func TestAnAgentReadsOnlyItsOwnRepliesAndRosterRow(t *testing.T) {
	f := startAuthFleet(t)
	ctx := context.Background()
	roster, err := f.srv.JS.KeyValue(ctx, projections.BucketRoster)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"a1", "a2"} {
		if _, err := roster.Put(ctx, a, []byte(`{"current_turn":"turn-of-`+a+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	a1, a2 := f.connect(t, "agent-a1"), f.connect(t, "agent-a2")
	if got, want := a1.nc.Opts.InboxPrefix, "_INBOX_agent-a1"; got != want {
		t.Errorf("agent a1's inbox prefix %q, want %q", got, want)
	}

	for _, subject := range []string{"_INBOX.>", "_INBOX_agent-a2.>", "_INBOX_gateway-h1.>", "fleet.>", "fleet.agent.a2.>", "$KV.fleet_roster.>", ">"} {
		a1.deny("subscribing to "+subject, subject, subscribe(a1, subject))
	}
	// a2's traffic goes on: a1 hears none of it.
	a2.allow("appending its own reply", appendEvent(a2, "a2", events.AgentReplied{Reply: "secret of a2"}))

	getRow := func(c *client, agent string) func(context.Context) error {
		return func(ctx context.Context) error {
			subj := "$JS.API.DIRECT.GET.KV_fleet_roster.$KV.fleet_roster." + agent
			msg, err := c.nc.RequestWithContext(ctx, subj, nil)
			if err != nil {
				return err
			}
			if !strings.Contains(string(msg.Data), "turn-of-"+agent) {
				return errors.New("row not found: " + string(msg.Data))
			}
			return nil
		}
	}
	a1.allow("reading its own roster row", getRow(a1, "a1"))
	a1.deny("reading a2's roster row", "$JS.API.DIRECT.GET.KV_fleet_roster.$KV.fleet_roster.a2", getRow(a1, "a2"))
	a1.deny("reading the roster through the leader", "$JS.API.STREAM.MSG.GET.KV_fleet_roster", func(ctx context.Context) error {
		_, err := a1.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_fleet_roster", []byte(`{"last_by_subj":"$KV.fleet_roster.a2"}`))
		return err
	})
	a1.deny("reading the log", "$JS.API.CONSUMER.CREATE.FLEET.spy.fleet.>", func(ctx context.Context) error {
		_, err := a1.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE.FLEET.spy.fleet.>", []byte(`{"stream_name":"FLEET","config":{"name":"spy","filter_subject":"fleet.>"}}`))
		return err
	})
	// The hook reads its row with exactly this request, over its own
	// client (natslite) signed in with a1's key.
	key, err := natscreds.Load(natsauth.KeyPath(f.dir, "agent-a1"))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := natslite.Connect(ctx, f.srv.ClientURL(), natslite.Options{NKey: key.PublicKey, Sign: key.Sign, InboxPrefix: key.InboxPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer hook.Close()
	if got := claudehook.CurrentTurn(ctx, hook, "a1"); got != "turn-of-a1" {
		t.Errorf("the hook's current turn for a1 = %q", got)
	}
	if got := claudehook.CurrentTurn(ctx, hook, "a2"); got != "" {
		t.Errorf("the hook's current turn for a2, read with a1's key = %q, want none", got)
	}
}

// A gateway's key may run the gateway — its host's and agents' events,
// turns for any agent, reads of the log, the projections, the router's
// durable consumers — and may not administer streams: no stream that
// republishes onto another host's agent, no purge, no edit, no delete.
func TestAGatewayRunsItsHostButCannotAdministerStreams(t *testing.T) {
	f := startAuthFleet(t)
	ctx := context.Background()
	admin := f.connect(t, "admin")
	admin.allow("appending b1's reply", appendEvent(admin, "b1", events.AgentReplied{Reply: "b1's real reply"}))
	gw := f.connect(t, "gateway-h1")

	// What the gateway does.
	gw.allow("announcing its host", appendEvent(gw, "h1", events.HostUp{Host: "h1"}))
	gw.allow("registering its own agent", appendEvent(gw, "a1", events.AgentRegistered{Agent: "a1", Host: "h1", Pane: "p1"}))
	gw.allow("typing for its own agent", appendEvent(gw, "a1", events.AgentTyped{Pane: "p1"}))
	gw.allow("queueing for another host's agent", appendEvent(gw, "b1", events.AgentQueued{Text: "cross-host turn"}))
	gw.allow("failing another host's turn", appendEvent(gw, "b1", events.AgentFailed{Reason: "timeout"}))
	gw.allow("queueing for a role", appendEvent(gw, "w", events.RoleQueued{Text: "role turn"}))
	gw.allow("reading the log", func(ctx context.Context) error {
		n := 0
		for _, err := range gw.log.Read(ctx, events.Query{Subjects: []string{"fleet.agent.>"}}) {
			if err != nil {
				return err
			}
			n++
		}
		if n < 5 {
			return errors.New("read too few events")
		}
		return nil
	})
	gw.allow("reading the last sequence of a subject", func(ctx context.Context) error {
		_, err := gw.log.LastSeq(ctx, "fleet.agent.b1.>")
		return err
	})
	for _, b := range projections.Buckets() {
		gw.allow("putting and getting in "+b, func(ctx context.Context) error {
			kv, err := gw.js.KeyValue(ctx, b)
			if err != nil {
				return err
			}
			if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
				return err
			}
			_, err = kv.Get(ctx, "k")
			return err
		})
	}
	gw.allow("running a router durable", func(ctx context.Context) error {
		c, err := gw.js.CreateOrUpdateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{
			Durable: "router-w", FilterSubject: "fleet.role.w.queued", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1,
		})
		if err != nil {
			return err
		}
		m, err := fetchOne(c, "the role turn")
		if err != nil {
			return err
		}
		return m.DoubleAck(ctx)
	})

	// What it may not.
	gw.deny("typing for another host's agent", "fleet.agent.b1.typed", appendEvent(gw, "b1", events.AgentTyped{Pane: "x"}))
	gw.deny("forging another host's agent's reply", "fleet.agent.b1.replied", appendEvent(gw, "b1", events.AgentReplied{Reply: "forged"}))
	gw.deny("announcing another host", "fleet.host.h2.up", appendEvent(gw, "h2", events.HostUp{Host: "h2"}))
	gw.deny("creating a stream that republishes onto b1's replies", "$JS.API.STREAM.CREATE.EVIL", func(ctx context.Context) error {
		_, err := gw.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"},
			RePublish: &jetstream.RePublish{Source: "evil.>", Destination: "fleet.agent.b1.replied"}})
		return err
	})
	gw.deny("purging b1's events", "$JS.API.STREAM.PURGE.FLEET", func(ctx context.Context) error {
		s, err := gw.js.Stream(ctx, events.Stream)
		if err != nil {
			return err
		}
		return s.Purge(ctx, jetstream.WithPurgeSubject("fleet.agent.b1.>"))
	})
	gw.deny("capping the log at 10 messages", "$JS.API.STREAM.UPDATE.FLEET", func(ctx context.Context) error {
		cfg := events.StreamConfig(events.StreamOptions{})
		cfg.MaxMsgs = 10
		_, err := gw.js.UpdateStream(ctx, cfg)
		return err
	})
	gw.deny("deleting the log", "$JS.API.STREAM.DELETE.FLEET", func(ctx context.Context) error {
		return gw.js.DeleteStream(ctx, events.Stream)
	})
	gw.deny("deleting a message of the log", "$JS.API.STREAM.MSG.DELETE.FLEET", func(ctx context.Context) error {
		s, err := gw.js.Stream(ctx, events.Stream)
		if err != nil {
			return err
		}
		return s.DeleteMsg(ctx, 1)
	})
	gw.deny("deleting the roster bucket", "$JS.API.STREAM.DELETE.KV_fleet_roster", func(ctx context.Context) error {
		return gw.js.DeleteKeyValue(ctx, projections.BucketRoster)
	})
	gw.deny("re-creating the roster bucket", "$JS.API.STREAM.UPDATE.KV_fleet_roster", func(ctx context.Context) error {
		_, err := gw.js.UpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: projections.BucketRoster, History: 5})
		return err
	})
	for _, subject := range []string{"_INBOX.>", "_INBOX_agent-a1.>", "_INBOX_gateway-h2.>", "fleet.>"} {
		gw.deny("subscribing to "+subject, subject, subscribe(gw, subject))
	}

	// The log is as it was: b1's reply is there, nothing forged, no cap,
	// no second stream.
	info, err := f.srv.JS.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := info.CachedInfo().Config; cfg.MaxMsgs != -1 {
		t.Errorf("FLEET max msgs %d after the gateway's edit", cfg.MaxMsgs)
	}
	var b1 []string
	for ev, err := range events.New(f.srv.JS, events.Options{}).Read(ctx, events.Query{Subjects: []string{"fleet.agent.b1.replied"}}) {
		if err != nil {
			t.Fatal(err)
		}
		b1 = append(b1, ev.Data.(events.AgentReplied).Reply)
	}
	if !slices.Equal(b1, []string{"b1's real reply"}) {
		t.Errorf("b1's replies %q", b1)
	}
	if _, err := f.srv.JS.Stream(ctx, "EVIL"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("stream EVIL: %v", err)
	}
}

// The admin provisions and administers: it creates, edits and deletes
// streams the gateways may not touch.
func TestTheAdminAdministersStreams(t *testing.T) {
	f := startAuthFleet(t)
	admin := f.connect(t, "admin")
	admin.allow("creating, editing and deleting a stream", func(ctx context.Context) error {
		if _, err := admin.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SCRATCH", Subjects: []string{"scratch.>"}}); err != nil {
			return err
		}
		if _, err := admin.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "SCRATCH", Subjects: []string{"scratch.>"}, MaxMsgs: 10}); err != nil {
			return err
		}
		return admin.js.DeleteStream(ctx, "SCRATCH")
	})
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

// Write keeps agents' keys in their own directory, away from the keys
// that may do more; every file is 0600, also over an older, wider file;
// keys of identities no longer in the fleet (or of the old flat layout)
// are removed.
func TestWriteLaysOutPrivateKeys(t *testing.T) {
	dir := t.TempDir()
	// An older run: a world-readable gateway key, a flat agent key, and a
	// key of an agent that has since left.
	for _, p := range []string{"gateway-h1.nk", "agent-w-1.nk", "agents/agent-gone.nk", "server.conf"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	creds, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h1": {"w-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.Write(dir, creds); err != nil {
		t.Fatal(err)
	}
	want := []string{"admin.nk", "agents/agent-w-1.nk", "gateway-h1.nk", "server.conf"}
	var got []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got = append(got, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", rel, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	seed, _ := os.ReadFile(filepath.Join(dir, "gateway-h1.nk"))
	if id, _ := creds.Identity("gateway-h1"); strings.TrimSpace(string(seed)) != string(id.Seed) {
		t.Error("the gateway's key was not rewritten")
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "server.conf"))
	if !strings.Contains(string(conf), creds.RoutePassword) || len(creds.RoutePassword) < 32 {
		t.Error("server.conf has no route secret")
	}
}

// A pane gets its agent's own key from the agents directory beside its
// gateway's (or the admin's) key, never theirs, and nothing for an agent
// without one.
func TestAgentCredsAreTheAgentsOwnFileInTheAgentsDirectory(t *testing.T) {
	dir := t.TempDir()
	creds, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h1": {"w-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.Write(dir, creds); err != nil {
		t.Fatal(err)
	}
	gw, admin := filepath.Join(dir, "gateway-h1.nk"), filepath.Join(dir, "admin.nk")
	want := filepath.Join(dir, "agents", "agent-w-1.nk")
	for _, from := range []string{gw, admin} {
		if got := natsauth.AgentCreds(from, "w-1"); got != want {
			t.Errorf("AgentCreds(%s, w-1) = %q, want %q", filepath.Base(from), got, want)
		}
	}
	for _, c := range []struct{ creds, agent string }{
		{gw, "w-2"},      // no file for it
		{gw, "../admin"}, // not an agent id
		{filepath.Join(dir, "server.conf"), "w-1"},
		{want, "w-1"}, // an agent's key leads nowhere
	} {
		if got := natsauth.AgentCreds(c.creds, c.agent); got != "" {
			t.Errorf("AgentCreds(%s, %s) = %q, want none", filepath.Base(c.creds), c.agent, got)
		}
	}
	for path, prefix := range map[string]string{gw: "_INBOX_gateway-h1", want: "_INBOX_agent-w-1", admin: ""} {
		if got := natsauth.InboxPrefix(natsauth.IdentityName(path)); got != prefix {
			t.Errorf("inbox prefix of %s = %q, want %q", filepath.Base(path), got, prefix)
		}
	}
}

// The roster row an agent may read is the one its hook reads, and the
// buckets a gateway may write are the projection's.
func TestTheBucketsAreTheProjections(t *testing.T) {
	pub, _ := natsauth.AgentPermissions("a1")
	if !slices.Contains(pub, projections.RosterGetSubject("a1")) {
		t.Errorf("agent a1 may not make the roster read its hook makes: %v", pub)
	}
	pub, _ = natsauth.GatewayPermissions("h1", nil)
	for _, b := range projections.Buckets() {
		if !slices.Contains(pub, "$KV."+b+".>") {
			t.Errorf("a gateway may not write bucket %s: %v", b, pub)
		}
	}
}

func TestParseFleetPlacesEachAgentOnItsHostAndRefusesStrangers(t *testing.T) {
	f, err := natsauth.ParseFleet([]string{"h1", "h2"}, []string{"h1:w-1", "h2:w-2", "h1:w-3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Hosts; len(got) != 2 || strings.Join(got["h1"], ",") != "w-1,w-3" || strings.Join(got["h2"], ",") != "w-2" {
		t.Fatalf("hosts = %v", got)
	}
	for _, bad := range []string{"w-1", "h3:w-1"} {
		if _, err := natsauth.ParseFleet([]string{"h1"}, []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An agent's key reads its own fleet inbox through its durable consumer —
// the consumer the gateway opened, pulled and acknowledged with the
// agent's own key — and cannot read another agent's; the gateway posts to
// any agent's inbox.
func TestAnAgentReadsOnlyItsOwnFleetInbox(t *testing.T) {
	f := startAuthFleet(t)
	gw := f.connect(t, "gateway-h1")
	boxes, err := inbox.New(inbox.Config{Log: gw.log, JS: gw.js})
	if err != nil {
		t.Fatal(err)
	}
	ctx := fleettest.Ctx(t)
	for _, to := range []string{"a1", "a2", "b1"} {
		if _, err := boxes.Post(ctx, inbox.Message{To: to, From: "lead", Text: "for " + to}); err != nil {
			t.Fatalf("gateway posting to %s: %v", to, err)
		}
		if _, err := boxes.Open(ctx, to); err != nil {
			t.Fatalf("gateway opening %s's inbox: %v", to, err)
		}
	}
	a1 := f.connect(t, "agent-a1")
	a1.allow("pulling and acknowledging its own inbox", func(ctx context.Context) error {
		cons, err := a1.js.Consumer(ctx, events.Stream, inbox.ConsumerName("a1"))
		if err != nil {
			return err
		}
		msg, err := fetchOne(cons, "a1's inbox message")
		if err != nil {
			return err
		}
		if !strings.Contains(string(msg.Data()), "for a1") {
			return errors.New("not its message: " + string(msg.Data()))
		}
		return msg.DoubleAck(ctx)
	})
	next := "$JS.API.CONSUMER.MSG.NEXT.FLEET." + inbox.ConsumerName("a2")
	a1.deny("pulling a2's inbox", next, func(ctx context.Context) error {
		_, err := a1.nc.RequestWithContext(ctx, next, []byte(`{"batch":1}`))
		return err
	})
	a1.deny("posting to a2's inbox itself", "fleet.agent.a2.inbox", appendEvent(a1, "a2", events.AgentInbox{From: "a1", Text: "forged"}))
}

// Connect is how a fleetd command reaches the fabric: as its key, with
// JetStream over the connection; a wrong key is refused and said so.
func TestConnectAsAKeyOrNotAtAll(t *testing.T) {
	f := startAuthFleet(t)
	nc, js, err := natsauth.Connect(f.srv.ClientURL(), "test", natsauth.KeyPath(f.dir, natsauth.GatewayName("h1")), "")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := js.Stream(context.Background(), events.Stream); err != nil {
		t.Errorf("the gateway's key reads FLEET: %v", err)
	}
	if _, _, err := natsauth.Connect(f.srv.ClientURL(), "test", "", "not-a-token"); !errors.Is(err, natsauth.ErrNoServer) || !strings.Contains(err.Error(), "connect to fleetd's NATS at "+f.srv.ClientURL()) {
		t.Errorf("connect without a key: %v, want refused, naming the URL", err)
	}
}

// HowTo names every key it wrote and the keys a host must not get.
func TestHowToNamesEveryKeyAndWhereItGoes(t *testing.T) {
	creds, err := natsauth.Generate(natsauth.Fleet{Hosts: map[string][]string{"h1": {"a1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	creds.HowTo(&out, "/keys")
	for _, want := range []string{"wrote /keys/server.conf", natsauth.KeyPath("/keys", natsauth.AgentName("a1")),
		"fleetd up --server-config /keys/server.conf --creds " + natsauth.KeyPath("/keys", natsauth.GatewayName("<host>")), "keep admin.nk off the hosts"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("HowTo lacks %q:\n%s", want, out.String())
		}
	}
}
