package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/mcpserver"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/roles"
)

// fixture is a fabric with one played worker (w-1) and two mains that
// read by pull (main-a, main-b), a shim over it with inboxes and the
// notifier, and an MCP client session connected in memory to a server for
// agent "main-a".
type fixture struct {
	f      *fleettest.Fleet
	client *leadshim.Client
	cs     *mcp.ClientSession
}

func start(t *testing.T, mod func(*mcpserver.Config)) *fixture {
	t.Helper()
	f := fleettest.NewKind(t, fleettest.Projected)
	f.Register("w-1", "w")
	f.Register("main-a", "main")
	f.Register("main-b", "main")
	f.RunAgents(0, "w-1")
	boxes, err := inbox.New(inbox.Config{Log: f.Log, JS: f.NATS.JS})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "notifier", (&inbox.Notifier{Inboxes: boxes, JS: f.NATS.JS, Turns: f.Views}).Run)
	runner, err := orchestrator.NewRunner(orchestrator.RunnerConfig{Log: f.Log, Views: f.Views})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "job runner", runner.Run)
	shim, err := leadshim.New(leadshim.Config{Log: f.Log, Views: f.Views, NC: f.NATS.NC, Host: "h1", Inbox: boxes,
		Spawner: &fakeSpawner{log: f.Log, views: f.Views}, Jobs: gateway.ShimJobs{Runner: runner},
		Roles: roles.Config{Roles: map[string]roles.Role{
			"w":    {Description: "workers"},
			"main": {Description: "mains", Inbox: true, MaySpawn: []string{"w"}},
			"lead": {Description: "the lead", Inbox: true, MaySpawn: []string{"w", "main"}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(shim.Handler())
	t.Cleanup(hs.Close)
	client := leadshim.NewClient(hs.URL, "")
	cfg := mcpserver.Config{Fleet: client, Agent: "main-a", MaxText: 4096}
	if mod != nil {
		mod(&cfg)
	}
	return &fixture{f: f, client: client, cs: connect(t, cfg)}
}

// connect serves cfg's server over an in-memory transport and returns a
// client session on it, both closed when the test ends.
func connect(t *testing.T, cfg mcpserver.Config) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := fleettest.Ctx(t)
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool; a protocol error fails the test, a tool error is
// returned as the result's text with isError.
func (x *fixture) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	res, err := x.cs.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", name, err)
	}
	return text(res), res.IsError
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestListToolsNamesEveryToolWithDescriptionAndObjectSchema(t *testing.T) {
	x := start(t, nil)
	res, err := x.cs.ListTools(fleettest.Ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 40 {
			t.Errorf("tool %s: description %q is too thin for a model to choose it", tool.Name, tool.Description)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" {
			t.Errorf("tool %s: input schema %s is not an object schema", tool.Name, b)
		}
	}
	for _, want := range []string{"send", "wait", "roster", "sessions", "roles", "inbox", "reply", "context", "spawn", "orchestrate", "answer"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
}

func TestSendBlocksAndReturnsTheReply(t *testing.T) {
	x := start(t, nil)
	got, isErr := x.call(t, "send", map[string]any{"to": "w-1", "text": "write the tests"})
	if isErr {
		t.Fatalf("send: tool error %s", got)
	}
	var env leadshim.Envelope
	if err := json.Unmarshal([]byte(got), &env); err != nil {
		t.Fatalf("send result %q: %v", got, err)
	}
	if env.Status != "replied" || env.Reply != fleettest.Reply("write the tests") || env.Agent != "w-1" {
		t.Errorf("envelope = %+v, want w-1 replied %q", env, fleettest.Reply("write the tests"))
	}
}

func TestAsyncSendThenWaitReturnsTheReplyAndTheSender(t *testing.T) {
	x := start(t, nil)
	got, isErr := x.call(t, "send", map[string]any{"to": "w-1", "text": "later", "async": true})
	if isErr {
		t.Fatalf("send: tool error %s", got)
	}
	var acc leadshim.Accepted
	if err := json.Unmarshal([]byte(got), &acc); err != nil || acc.ID == "" {
		t.Fatalf("async send result %q: want a turn id (%v)", got, err)
	}
	got, isErr = x.call(t, "wait", map[string]any{"id": acc.ID, "timeout": "30s"})
	if isErr {
		t.Fatalf("wait: tool error %s", got)
	}
	var env leadshim.Envelope
	if err := json.Unmarshal([]byte(got), &env); err != nil || env.Status != "replied" || env.Reply != fleettest.Reply("later") {
		t.Fatalf("wait result %q (%v): want replied", got, err)
	}
	// The turn says who sent it: the agent the server serves.
	ts, ok, err := x.f.Views.Turn(fleettest.Ctx(t), acc.ID)
	if err != nil || !ok || ts.From != "main-a" {
		t.Errorf("turn %s from %q, want main-a", acc.ID, ts.From)
	}
}

func TestListingToolsAnswerWithTheReadModels(t *testing.T) {
	x := start(t, nil)
	for tool, want := range map[string]string{"roster": `"agent": "w-1"`, "roles": `"may_spawn": [`, "sessions": "["} {
		got, isErr := x.call(t, tool, map[string]any{})
		if isErr || !strings.Contains(got, want) {
			t.Errorf("%s = %q (error %v), want it to contain %q", tool, got, isErr, want)
		}
	}
}

func TestBadInputIsAToolErrorThatSaysWhatToChange(t *testing.T) {
	x := start(t, nil)
	for _, tc := range []struct {
		name, tool string
		args       any
		want       string
	}{
		{"unknown agent", "send", map[string]any{"to": "nobody", "text": "hi"}, "404"},
		{"bad agent id", "send", map[string]any{"to": "Not An Id", "text": "hi"}, "bad_agent"},
		{"unknown session", "send", map[string]any{"to": "session:nope", "text": "hi"}, "no session named"},
		{"empty text", "send", map[string]any{"to": "w-1", "text": "  "}, "empty"},
		{"oversize text", "send", map[string]any{"to": "w-1", "text": strings.Repeat("x", 5000)}, "over the limit"},
		{"missing text", "send", map[string]any{"to": "w-1"}, "text"},
		{"text of the wrong type", "send", map[string]any{"to": "w-1", "text": 42}, "text"},
		{"async of the wrong type", "send", map[string]any{"to": "w-1", "text": "x", "async": "yes"}, "async"},
		{"bad timeout", "send", map[string]any{"to": "w-1", "text": "x", "timeout": "soon"}, "bad_timeout"},
		{"unknown turn", "wait", map[string]any{"id": "01JF6Z00000000000000000000"}, "404"},
		{"empty turn id", "wait", map[string]any{"id": ""}, "id is empty"},
		{"unknown argument", "roster", map[string]any{"bogus": 1}, "bogus"},
		{"max out of range", "inbox", map[string]any{"max": 500}, "max"},
		{"max of the wrong type", "inbox", map[string]any{"max": "ten"}, "max"},
		{"bad wait", "inbox", map[string]any{"wait": "soon"}, "bad_wait"},
		{"ack of the wrong type", "inbox", map[string]any{"ack": "01JF6Z00000000000000000000"}, "ack"},
		{"reply to a message never pulled", "reply", map[string]any{"id": "01JF6Z00000000000000000000", "text": "hi"}, "pass to"},
		{"reply to an unknown agent", "reply", map[string]any{"id": "01JF6Z00000000000000000000", "text": "hi", "to": "nobody"}, "404"},
		{"empty reply", "reply", map[string]any{"id": "01JF6Z00000000000000000000", "text": "", "to": "main-b"}, "empty"},
		{"spawn of a role mine may not", "spawn", map[string]any{"role": "main", "name": "main-c"}, "not_allowed"},
		{"spawn of an unknown role", "spawn", map[string]any{"role": "ghost", "name": "g-1"}, "unknown_role"},
		{"spawn of a name taken", "spawn", map[string]any{"role": "w", "name": "w-1"}, "name_taken"},
		{"spawn of a bad name", "spawn", map[string]any{"role": "w", "name": "Bad Name"}, "bad_name"},
		{"spawn without a name", "spawn", map[string]any{"role": "w"}, "name"},
		{"spawn with a name of the wrong type", "spawn", map[string]any{"role": "w", "name": 7}, "name"},
		{"orchestrate with nothing", "orchestrate", map[string]any{}, "give a plan"},
		{"orchestrate a plan without tasks", "orchestrate", map[string]any{"plan": map[string]any{"goal": "g"}}, "tasks"},
		{"orchestrate a plan with no task", "orchestrate", map[string]any{"plan": map[string]any{"goal": "g", "tasks": []any{}}}, "bad_plan"},
		{"orchestrate a task for a bad target", "orchestrate", map[string]any{"plan": map[string]any{"goal": "g", "tasks": []any{
			map[string]any{"id": "a", "to": "Not A Target", "instructions": "x"}}}}, "bad_plan"},
		{"orchestrate a plan with a cycle", "orchestrate", map[string]any{"plan": map[string]any{"goal": "g", "tasks": []any{
			map[string]any{"id": "a", "to": "w-1", "instructions": "x", "needs": []string{"b"}},
			map[string]any{"id": "b", "to": "w-1", "instructions": "y", "needs": []string{"a"}}}}}, "cycle"},
		{"orchestrate a plan of the wrong type", "orchestrate", map[string]any{"plan": "do it all"}, "plan"},
		{"orchestrate a task with an unknown field", "orchestrate", map[string]any{"plan": map[string]any{"goal": "g", "tasks": []any{
			map[string]any{"id": "a", "to": "w-1", "instructions": "x", "deadline": "soon"}}}}, "deadline"},
		{"report on an unknown job", "orchestrate", map[string]any{"job": "NOJOB"}, "unknown_job"},
		{"resume an unknown job", "orchestrate", map[string]any{"job": "NOJOB", "resume": true}, "unknown_job"},
		{"report on a bad job id", "orchestrate", map[string]any{"job": "bad job"}, "bad_job"},
		{"a bad parent job id", "orchestrate", map[string]any{"parent_job": "bad job", "plan": map[string]any{"goal": "g", "tasks": []any{
			map[string]any{"id": "a", "to": "w-1", "instructions": "x"}}}}, "bad_job"},
		{"oversize reply", "reply", map[string]any{"id": "01JF6Z00000000000000000000", "text": strings.Repeat("x", 5000), "to": "main-b"}, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := x.cs.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			// The SDK refuses arguments that do not fit the schema as a
			// protocol error or a tool error; either way it says which.
			var got string
			switch {
			case err != nil:
				got = err.Error()
			case !res.IsError:
				t.Fatalf("%s(%v) succeeded: %s", tc.tool, tc.args, text(res))
			default:
				got = text(res)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s(%v) error %q, want it to mention %q", tc.tool, tc.args, got, tc.want)
			}
		})
	}
	// An unknown tool is an error, and the server serves on after all of it.
	if _, err := x.cs.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: "explode", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "explode") {
		t.Errorf("unknown tool: err = %v, want one naming it", err)
	}
	if got, isErr := x.call(t, "roster", map[string]any{}); isErr {
		t.Errorf("roster after bad calls: %s", got)
	}
}

func TestUnreachableFleetdIsAToolError(t *testing.T) {
	cs := connect(t, mcpserver.Config{Fleet: leadshim.NewClient("http://127.0.0.1:1", ""), Agent: "main-a"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "roster", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "not reachable") {
		t.Errorf("roster with no fleetd = %q (error %v), want a tool error saying fleetd is not reachable", text(res), res.IsError)
	}
}

func TestConfigNeedsAValidAgentID(t *testing.T) {
	for _, agent := range []string{"", "Bad Id"} {
		if _, err := mcpserver.New(mcpserver.Config{Fleet: leadshim.NewClient("http://x", ""), Agent: agent}); err == nil {
			t.Errorf("New with agent %q: no error", agent)
		}
	}
}

// ok calls a tool that must succeed and returns its text.
func (x *fixture) ok(t *testing.T, name string, args any) string {
	t.Helper()
	got, isErr := x.call(t, name, args)
	if isErr {
		t.Fatalf("%s: tool error %s", name, got)
	}
	return got
}

// decode reads a tool's JSON result.
func decode[T any](t *testing.T, got string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("result %q: %v", got, err)
	}
	return v
}

func TestMainsTalkThroughTheirInboxesAsEquals(t *testing.T) {
	x := start(t, nil)
	b := &fixture{f: x.f, client: x.client, cs: connect(t, mcpserver.Config{Fleet: x.client, Agent: "main-b"})}

	// A sends to B, which reads by pull: the text goes to B's inbox.
	sent := decode[mcpserver.Delivered](t, x.ok(t, "send", map[string]any{"to": "main-b", "text": "what does the API return?"}))
	if !sent.Inbox || sent.To != "main-b" || sent.Message == "" {
		t.Fatalf("send to a main = %+v, want it delivered to main-b's inbox", sent)
	}
	// B pulls it, and answers.
	in := decode[mcpserver.InboxResult](t, b.ok(t, "inbox", map[string]any{}))
	if len(in.Messages) != 1 || in.Messages[0].ID != sent.Message || in.Messages[0].From != "main-a" || in.Messages[0].Text != "what does the API return?" {
		t.Fatalf("main-b's inbox = %+v, want main-a's message", in.Messages)
	}
	reply := decode[map[string]any](t, b.ok(t, "reply", map[string]any{"id": sent.Message, "text": "a JSON list"}))
	if reply["acknowledged"] != true || reply["to"] != "main-a" {
		t.Fatalf("reply = %v, want it sent to main-a and the message acknowledged", reply)
	}
	// The answer lands in A's inbox, marked as the answer; B's is empty.
	in = decode[mcpserver.InboxResult](t, x.ok(t, "inbox", map[string]any{"wait": "20s"}))
	if len(in.Messages) != 1 || in.Messages[0].ReplyTo != sent.Message || in.Messages[0].From != "main-b" || in.Messages[0].Text != "a JSON list" {
		t.Fatalf("main-a's inbox = %+v, want main-b's answer", in.Messages)
	}
	// A acknowledges it on its next call: then nothing is left.
	in = decode[mcpserver.InboxResult](t, x.ok(t, "inbox", map[string]any{"ack": []string{in.Messages[0].ID}}))
	if len(in.Acked) != 1 || len(in.Messages) != 0 {
		t.Errorf("inbox with ack = %+v, want the answer acknowledged and nothing left", in)
	}
	if in := decode[mcpserver.InboxResult](t, b.ok(t, "inbox", map[string]any{})); len(in.Messages) != 0 {
		t.Errorf("main-b's inbox after its reply = %+v, want nothing (the reply acknowledged it)", in.Messages)
	}
}

func TestNotifyPutsTheReplyInTheSendersInbox(t *testing.T) {
	x := start(t, nil)
	acc := decode[leadshim.Accepted](t, x.ok(t, "send", map[string]any{"to": "w-1", "text": "long job", "notify": true}))
	if acc.ID == "" {
		t.Fatal("notify send returned no turn id")
	}
	in := decode[mcpserver.InboxResult](t, x.ok(t, "inbox", map[string]any{"wait": "30s"}))
	if len(in.Messages) != 1 {
		t.Fatalf("inbox = %+v, want the turn's notification", in)
	}
	m := in.Messages[0]
	if m.Turn != acc.ID || m.Status != "replied" || m.Text != fleettest.Reply("long job") || m.From != "w-1" {
		t.Errorf("notification = %+v, want turn %s replied by w-1 with %q", m, acc.ID, fleettest.Reply("long job"))
	}
}

func TestContextPutsAndGetsAJobsItems(t *testing.T) {
	x := start(t, nil)
	x.f.MustAppend(events.Event{Subject: "J1", CorrelationID: "J1", Data: events.JobCreated{Goal: "ship it"}})
	x.f.MustAppend(events.Event{Subject: "J1", CorrelationID: "J1", Data: events.JobContext{Key: "spec", Tags: []string{"api"}, Text: "the spec", Size: 8}})

	put := decode[leadshim.ContextItem](t, x.ok(t, "context", map[string]any{"job": "J1", "action": "put", "key": "finding", "tags": []string{"api"}, "text": "port 8443"}))
	if put.Key != "finding" || put.Provenance != "agent:main-a" || put.Seq == 0 {
		t.Errorf("put = %+v, want the item stored, from main-a", put)
	}
	all := decode[[]leadshim.ContextItem](t, x.ok(t, "context", map[string]any{"job": "J1", "action": "get"}))
	if len(all) != 2 || all[0].Key != "finding" || all[1].Key != "spec" {
		t.Errorf("get all = %+v, want finding and spec", all)
	}
	byKey := decode[[]leadshim.ContextItem](t, x.ok(t, "context", map[string]any{"job": "J1", "action": "get", "select": []string{"spec"}}))
	if len(byKey) != 1 || byKey[0].Text != "the spec" {
		t.Errorf("get spec = %+v", byKey)
	}
	byTag := decode[[]leadshim.ContextItem](t, x.ok(t, "context", map[string]any{"job": "J1", "action": "get", "select": []string{"tag:api"}}))
	if len(byTag) != 2 {
		t.Errorf("get tag:api = %+v, want both", byTag)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"job": "NOPE", "action": "get"}, "unknown_job"},
		{map[string]any{"job": "J1", "action": "delete"}, "want get or put"},
		{map[string]any{"job": "J1", "action": "put", "text": "x"}, "key is empty"},
		{map[string]any{"job": "J1", "action": "put", "key": "k", "text": strings.Repeat("x", 5000)}, "over the limit"},
		{map[string]any{"job": "bad job", "action": "get"}, "bad_job"},
	} {
		if got, isErr := x.call(t, "context", tc.args); !isErr || !strings.Contains(got, tc.want) {
			t.Errorf("context(%v) = %q (error %v), want an error mentioning %q", tc.args, got, isErr, tc.want)
		}
	}
}

// fakeSpawner plays the gateway's spawner: it appends what a real spawn
// and its agent's first hooks write — registered on host h1, the session
// started, idle — and waits until the views show it.
type fakeSpawner struct {
	log   events.Log
	views interface {
		WaitSeq(ctx context.Context, seq uint64) error
	}
}

func (s *fakeSpawner) Spawn(ctx context.Context, req leadshim.SpawnRequest) (events.AgentRegistered, error) {
	reg := events.AgentRegistered{Agent: req.Name, Host: "h1", Pane: "p-" + req.Name, Role: req.Role, Tier: 2, Parent: req.Parent,
		Model: req.Model, Session: req.Session, Origin: "spawned"}
	var last uint64
	for _, d := range []events.Data{reg, events.AgentSession{SessionID: "sid-" + req.Name, State: "started"}, events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}} {
		ack, err := s.log.Append(ctx, events.Event{Subject: req.Name, Data: d})
		if err != nil {
			return events.AgentRegistered{}, err
		}
		last = ack.Seq
	}
	return reg, s.views.WaitSeq(ctx, last)
}

func TestSpawnStartsAnAgentOfARoleMineMaySpawn(t *testing.T) {
	x := start(t, nil)
	reg := decode[events.AgentRegistered](t, x.ok(t, "spawn", map[string]any{"role": "w", "name": "w-7", "model": "m-big"}))
	if reg.Agent != "w-7" || reg.Host != "h1" || reg.Role != "w" || reg.Parent != "main-a" || reg.Model != "m-big" {
		t.Fatalf("spawn = %+v, want w-7 of role w on h1, working for main-a", reg)
	}
	// It is on the roster, and takes work at once.
	if a, ok := x.f.Views.Agent("w-7"); !ok || a.Host != "h1" || a.Role != "w" {
		t.Errorf("roster row of w-7 = %+v (%v)", a, ok)
	}
	// Its name is taken now.
	if got, isErr := x.call(t, "spawn", map[string]any{"role": "w", "name": "w-7"}); !isErr || !strings.Contains(got, "name_taken") {
		t.Errorf("second spawn of w-7 = %q (error %v), want name_taken", got, isErr)
	}
}

func TestSpawnTakesTheCallersRoleFromTheRosterOrItsConfig(t *testing.T) {
	x := start(t, nil)
	// A lead outside fleetd is no agent of the roster: it names its role.
	lead := connect(t, mcpserver.Config{Fleet: x.client, Agent: "lead", Role: "lead"})
	res, err := lead.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: "spawn", Arguments: map[string]any{"role": "main", "name": "main-c"}})
	if err != nil || res.IsError {
		t.Fatalf("lead spawning a main: %v %s", err, text(res))
	}
	// Without a role it may spawn nothing, and it says how to fix that.
	anon := connect(t, mcpserver.Config{Fleet: x.client, Agent: "outsider"})
	res, err = anon.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: "spawn", Arguments: map[string]any{"role": "w", "name": "w-8"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "--role") {
		t.Errorf("spawn by an unknown caller = %v %q, want refused naming --role", err, text(res))
	}
	// A registered main cannot claim to be the lead.
	liar := connect(t, mcpserver.Config{Fleet: x.client, Agent: "main-b", Role: "lead"})
	res, err = liar.CallTool(fleettest.Ctx(t), &mcp.CallToolParams{Name: "spawn", Arguments: map[string]any{"role": "main", "name": "main-d"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), `registered with role "main"`) {
		t.Errorf("main-b claiming lead = %v %q, want refused", err, text(res))
	}
	if _, ok := x.f.Views.Agent("main-d"); ok {
		t.Error("main-d was spawned all the same")
	}
}

func TestOrchestrateRunsAPlanToItsRollup(t *testing.T) {
	x := start(t, nil)
	plan := map[string]any{"goal": "ship", "tasks": []any{
		map[string]any{"id": "design", "to": "w-1", "instructions": "design it"},
		map[string]any{"id": "build", "to": "w-1", "instructions": "build it", "needs": []string{"design"}},
	}}
	got := decode[mcpserver.JobResult](t, x.ok(t, "orchestrate", map[string]any{"plan": plan, "timeout": "30s", "parent_job": "J0"}))
	if got.Status != "ok" || got.Job == "" || !strings.HasPrefix(got.Rollup, fleettest.Reply("build it")) {
		t.Fatalf("orchestrate = %+v, want ok with build's rollup", got)
	}
	if len(got.Tasks) != 2 || got.Tasks[0].State != "replied" || got.Tasks[1].State != "replied" || got.Tasks[1].Agent != "w-1" {
		t.Errorf("tasks = %+v, want both replied by w-1", got.Tasks)
	}
	// The job is on the log as main-a's: its turns are from main-a.
	queued := 0
	for _, ev := range eventstest.ReadAll(t, x.f.Log, events.Query{Subjects: []string{"fleet.agent.*.queued"}}) {
		if q := ev.Data.(events.AgentQueued); q.Job == got.Job {
			queued++
			if q.From != "main-a" {
				t.Errorf("task %s's turn is from %q, want main-a", q.Task, q.From)
			}
		}
	}
	if queued != 2 {
		t.Errorf("%d turns queued for the job, want 2", queued)
	}
	created := eventstest.ReadAll(t, x.f.Log, events.Query{Subjects: []string{"fleet.job." + got.Job + ".created"}})
	if len(created) != 1 || created[0].Data.(events.JobCreated).Parent != "J0" {
		t.Errorf("job %s created %+v, want once with parent J0", got.Job, created)
	}
	// Reported again, the job has not run twice.
	again := decode[mcpserver.JobResult](t, x.ok(t, "orchestrate", map[string]any{"job": got.Job}))
	if again.Status != "ok" || again.Rollup != got.Rollup {
		t.Errorf("report on %s = %+v, want the same rollup", got.Job, again)
	}
}

func TestOrchestrateAsyncReturnsTheJobToWaitOn(t *testing.T) {
	x := start(t, nil)
	plan := map[string]any{"goal": "later", "tasks": []any{map[string]any{"id": "one", "to": "w-1", "instructions": "do one"}}}
	acc := decode[mcpserver.JobResult](t, x.ok(t, "orchestrate", map[string]any{"plan": plan, "async": true}))
	if acc.Job == "" {
		t.Fatalf("async orchestrate = %+v, want a job id", acc)
	}
	got := decode[mcpserver.JobResult](t, x.ok(t, "orchestrate", map[string]any{"job": acc.Job, "timeout": "30s"}))
	if got.Status != "ok" || !strings.HasPrefix(got.Rollup, fleettest.Reply("do one")) {
		t.Errorf("job %s = %+v, want ok with one's rollup", acc.Job, got)
	}
}
