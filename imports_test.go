package fleetd_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fleetd/fleetd"

// allowed lists, for every package, the fleetd packages it may import
// (directly or not). A new package must be added here on purpose.
var allowed = map[string][]string{
	"":                                  {}, // the root: this test only
	"events":                            {"events/eventcore"},
	"events/eventcore":                  {}, // no NATS client either: the hook binary links it (see its doc.go)
	"events/eventstest":                 {"events", "events/eventcore"},
	"embeddednats":                      {},
	"embeddednats/natstest":             {"embeddednats", "internal/checkfor"},
	"lifecycle":                         {"events", "events/eventcore"},
	"roles":                             {},
	"projections/projectionstest":       {"events", "events/eventcore"},
	"projections":                       {"events", "events/eventcore", "lifecycle"},
	"herdrbridge":                       {"events", "events/eventcore", "lifecycle", "roles", "turns", "herdrbridge/herdrapi", "worktree", "internal/proc"},
	"herdrbridge/herdrapi":              {},
	"herdrbridge/herdrapi/herdrapitest": {"herdrbridge/herdrapi", "herdrbridge/herdrschema", "herdrbridge/herdrtest", "internal/checkfor", "internal/proc"},
	"herdrbridge/herdrtest":             {"internal/proc"},
	"herdrbridge/herdrschema":           {},
	"herdrbridge/recording":             {"herdrbridge", "events", "events/eventcore", "lifecycle", "roles", "turns", "herdrbridge/herdrapi", "worktree", "internal/proc"},
	"claudehook":                        {"events/eventcore", "internal/natslite", "internal/sockdial", "natsauth/natscreds", "worktree"}, // no more, and not events (nats.go): every hook exec links and starts it (cmd/fleetd-hook)
	"natsauth/natscreds":                {"events/eventcore"},                                                                             // not events: the hook links it
	"simagent":                          {"events", "events/eventcore", "claudehook", "internal/natslite", "internal/sockdial", "herdrbridge/herdrapi", "lifecycle", "natsauth", "natsauth/natscreds", "inbox", "projections", "worktree"},
	"turns":                             {"events", "events/eventcore", "lifecycle"},
	"router":                            {"events", "events/eventcore", "lifecycle", "projections", "roles", "turns", "internal/restart"},
	"budget":                            {"events", "events/eventcore", "lifecycle", "projections", "roles", "turns"},
	"retention":                         {"events", "events/eventcore", "lifecycle", "projections"},
	"jobs":                              {"events", "events/eventcore"},
	"inbox":                             {"events", "events/eventcore", "lifecycle", "internal/restart"},
	"nudge":                             {"events", "events/eventcore", "lifecycle", "projections", "roles", "turns", "internal/restart"},
	"leadshim":                          {"events", "events/eventcore", "lifecycle", "projections", "roles", "jobs", "turns", "inbox", "internal/restart"},
	"orchestrator":                      {"events", "events/eventcore", "lifecycle", "projections", "jobs", "turns"},
	"dashboard":                         {"events", "events/eventcore", "lifecycle", "projections", "jobs"},
	"internal/checkfor":                 {},
	"internal/clitable":                 {"events", "events/eventcore", "lifecycle", "projections", "jobs", "dashboard", "worktree", "leadshim", "roles", "turns", "inbox", "internal/restart"},
	"internal/restart":                  {},
	"internal/proc":                     {},
	"internal/natslite":                 {"internal/sockdial"}, // the hook's NATS client: no nats.go, no crypto/tls, no net (see its doc.go)
	"internal/sockdial":                 {},
	"internal/fleettest":                {"embeddednats", "embeddednats/natstest", "internal/checkfor", "events", "events/eventcore", "lifecycle", "projections", "jobs", "turns", "natsauth", "natsauth/natscreds", "inbox", "internal/restart"},
	"natsauth":                          {"events", "events/eventcore", "lifecycle", "projections", "inbox", "internal/restart", "natsauth/natscreds"},
	"fakeapi":                           {},
	"agentapi":                          {"internal/proc"}, // coder/agentapi's client and process runner; /proc for the agent below it
	"worktree":                          {},
	"worktree/worktreetest":             {},
	"bench": {"budget", "jobs", "turns", "demo", "gateway", "embeddednats", "events", "events/eventcore", "lifecycle", "projections", "roles", "router", "leadshim", "orchestrator", "herdrbridge",
		"dashboard", "herdrbridge/herdrapi", "herdrbridge/herdrtest", "claudehook", "internal/natslite", "internal/sockdial", "natsauth", "natsauth/natscreds", "inbox", "nudge", "retention", "fakeapi", "worktree", "internal/restart", "internal/proc", "agentapi"},
	"gateway": {"budget", "jobs", "turns", "embeddednats", "events", "events/eventcore", "lifecycle", "projections", "roles", "router", "leadshim", "orchestrator", "herdrbridge", "dashboard", "herdrbridge/herdrapi",
		"claudehook", "internal/natslite", "internal/sockdial", "natsauth", "natsauth/natscreds", "inbox", "nudge", "retention", "worktree", "internal/restart", "internal/proc"},
	"mcpserver": {"jobs", "turns", "events", "events/eventcore", "lifecycle", "projections", "roles", "leadshim", "inbox", "internal/restart"},
	"leadkit":   {"jobs", "turns", "events", "events/eventcore", "lifecycle", "projections", "roles", "orchestrator", "leadshim", "inbox", "internal/restart"},
	"demo": {"budget", "jobs", "turns", "gateway", "embeddednats", "events", "events/eventcore", "lifecycle", "projections", "roles", "router", "leadshim", "orchestrator", "herdrbridge", "dashboard", "herdrbridge/herdrapi",
		"claudehook", "internal/natslite", "internal/sockdial", "natsauth", "natsauth/natscreds", "inbox", "nudge", "retention", "herdrbridge/herdrtest", "fakeapi", "worktree", "internal/restart", "internal/proc", "agentapi"},
	// doctor reads what the others build: it checks, and changes nothing.
	"doctor": {"roles", "fakeapi", "claudehook", "internal/natslite", "internal/sockdial", "natsauth", "natsauth/natscreds", "worktree", "herdrbridge/herdrapi",
		"events", "events/eventcore", "lifecycle", "projections", "inbox", "internal/restart", "leadshim", "jobs", "turns", "agentapi", "internal/proc"},
	"cmd/fleetd":   nil, // cmd wires everything
	"cmd/dashshot": {},  // runs the fleetd binary; imports no fleetd package
	// The hook binary: what claudehook imports and nothing else, since every
	// agent execs it twice a turn (see its doc.go).
	"cmd/fleetd-hook": {"claudehook", "events/eventcore", "internal/natslite", "internal/sockdial", "natsauth/natscreds", "worktree"},
}

// hookFree are packages the hook binary must not link: nats.go and what
// its package initialisation drags in (gob, net/http, crypto/tls, x509)
// were most of a hook exec's time; package net links runtime/cgo, and a
// dynamically linked hook pays the loader on every exec (internal/sockdial).
var hookFree = []string{"github.com/nats-io/nats.go", "github.com/nats-io/nats.go/jetstream", "encoding/gob", "net/http", "crypto/tls", "crypto/x509", "net", "runtime/cgo"}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		allow, known := allowed[rel]
		if !known {
			t.Errorf("package %q is not in the import allow-list (imports_test.go): add it on purpose", rel)
			continue
		}
		seen++
		if heavy := slices.DeleteFunc(slices.Clone(p.Deps), func(d string) bool { return !slices.Contains(hookFree, d) }); rel == "cmd/fleetd-hook" && len(heavy) > 0 {
			t.Errorf("the hook binary links %v: each costs every hook exec its package initialisation (see internal/natslite)", heavy)
		}
		if rel == "cmd/fleetd" && slices.Contains(p.Deps, "testing") {
			t.Errorf("the fleetd binary links package testing: a non-test package it imports imports a test helper (herdrschema, internal/checkfor, natstest, …)")
		}
		for _, dep := range p.Deps {
			if !strings.HasPrefix(dep, module+"/") {
				continue
			}
			d := strings.TrimPrefix(dep, module+"/")
			if d == "cmd/fleetd" || strings.HasPrefix(d, "cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd", rel, d)
				continue
			}
			if allow != nil && !slices.Contains(allow, d) {
				t.Errorf("%s imports %s, which DESIGN.md's direction does not allow (allowed: %v)", rel, d, allow)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("checked only %d packages; go list output looks wrong", seen)
	}
}
