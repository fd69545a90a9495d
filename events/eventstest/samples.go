package eventstest

import (
	"time"

	"github.com/fleetd/fleetd/events"
)

// Samples returns one event of every type DESIGN.md names, each with its
// data fields filled, addressed to aggregates of the given agent.
func Samples(agent string) []events.Event {
	turn := "01JF6Z0000000000000000TURN"
	deadline := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	a := func(d events.Data) events.Event {
		return events.Event{Subject: agent, CorrelationID: turn, Data: d}
	}
	return []events.Event{
		a(events.AgentRegistered{Agent: agent, Host: "h1", Pane: "w1:p2", Role: "w-local", Tier: 2, Parent: "lead", Model: "claude-opus-5-5", Cwd: "/src/wt/" + agent, Origin: "spawned", EnvClass: "gateway",
			Worktree: events.Worktree{Repo: "/src", Path: "/src/wt/" + agent, Branch: "fleet/" + agent, Base: "main", Head: "a1b2c3"}, Sandbox: "bwrap"}),
		a(events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr", Pane: "w1:p2", StateChangeSeq: 7}),
		a(events.AgentQueued{From: "lead", Text: "write the tests", Context: []string{"spec", "tag:api"}, Deadline: deadline, AssignedFrom: "w-local",
			Normalized: events.Normalization{ControlSequences: 2, CarriageReturns: 1, RemovedBytes: 9}}),
		a(events.AgentTyped{Pane: "w1:p2", Method: "agent.prompt", StateChangeSeq: 7, Bytes: 15, Delivery: "file",
			File: "/src/.fleet/inbox/t.md", Prompt: "read @/src/.fleet/inbox/t.md", Pieces: 0, Clear: true}),
		a(events.AgentSubmitted{PromptID: "f592f45d", SessionID: "4f52", Via: "hook", Prompt: "write the tests"}),
		a(events.AgentReplied{Reply: "done: 3 tests", PromptID: "f592f45d", SessionID: "4f52", Model: "claude-opus-5-5", Tokens: events.Tokens{In: 120, Out: 40, CacheRead: 5}, CostUSD: 0.0123,
			Worktree: events.Worktree{Branch: "fleet/" + agent, Head: "d4e5f6", Dirty: 1, Ahead: 2}}),
		a(events.AgentUsage{PromptID: "f592f45d", SessionID: "4f52", Model: "claude-opus-5-5", Tokens: events.Tokens{In: 120, Out: 40, CacheCreation: 7}, CostUSD: 0.0123}),
		a(events.AgentFailed{Reason: events.ReasonIndeterminate, Message: "no submission seen"}),
		a(events.AgentSession{SessionID: "4f52", State: "started", Source: "startup", TranscriptPath: "/tmp/t.jsonl", Model: "claude-opus-5-5"}),
		a(events.AgentExited{Pane: "w1:p2", Reason: "pane_exited", Worktree: events.Worktree{Path: "/src/wt/" + agent, Kept: "1 uncommitted file"}}),
		a(events.AgentDeferred{Reason: "agent_not_ready", Message: "no longer the pane foreground process"}),
		a(events.AgentAttention{Reason: "composer_not_empty", Detail: "the prompt box holds text"}),
		a(events.AgentDialog{State: events.DialogOpen, Title: "Bash command", Question: "Do you want to proceed?", Detail: "touch marker",
			Options: []string{"Yes", "Yes, and always allow access to /src from this project", "No"}}),
		a(events.AgentAnswer{Option: 1, By: "lead"}),
		a(events.AgentRestart{State: events.RestartRestarted, Attempt: 2, Cause: "died", Delay: 2e9, Pane: "w1:p9", Resume: "4f52"}),
		a(events.AgentReleased{Role: "w-local", Attempt: 1, Reason: events.ReasonHostStale, Message: "host h3 silent for 15s"}),
		a(events.AgentInbox{From: "main-a", Text: "the schema is in docs/api.md", ReplyTo: "01JF6Z00000000000000000000", Turn: "01JF6Z00000000000000000001", Status: "replied"}),
		a(events.AgentInboxRead{Through: 42}),
		{Subject: "w-local", CorrelationID: turn, Data: events.RoleQueued{From: "lead", Text: "any worker", Deadline: deadline}},
		{Subject: "w-local", CorrelationID: turn, Data: events.RoleCancelled{By: "alice", Message: "cancelled by alice"}},
		a(events.AgentBudgetWarning{BudgetWarning: events.BudgetWarning{Limit: "usd_per_day", Scope: "agent", Percent: 80, Used: 16.5, Max: 20, FreesAt: deadline}}),
		{Subject: "w-local", Data: events.RoleBudgetWarning{BudgetWarning: events.BudgetWarning{Limit: "tokens_per_hour", Scope: "role", Percent: 100, Used: 2_000_100, Max: 2_000_000, FreesAt: deadline}}},
		{Subject: "h1", Data: events.HostUp{Host: "h1", Version: "dev", NATSURL: "nats://127.0.0.1:4222", PID: 42}},
		{Subject: "h1", Data: events.HostDown{Host: "h1", Reason: "signal"}},
		{Subject: "h1", Data: events.HostHerdr{Connected: true, Socket: "/run/herdr.sock", Version: "0.8.0", Protocol: 20}},
		{Subject: "J1", Data: events.JobCreated{Goal: "ship", Plan: "plan.json", Tasks: []events.TaskSpecBrief{{ID: "a", To: "role:main"}}}},
		{Subject: "J1", Data: events.JobContext{Key: "spec", Tags: []string{"api"}, Text: "the spec", Provenance: "user", Size: 8}},
		{Subject: "J1", Data: events.JobSliced{Task: "a", Session: "main-a", Items: []string{"spec"}, Bytes: 8, Budget: 100}},
		{Subject: "J1", Data: events.JobTask{Task: "a", State: events.TaskReplied, Turn: turn, Agent: agent, Rollup: "ok"}},
		{Subject: "J1", Data: events.JobDone{Status: "ok", Result: "shipped"}},
	}
}
