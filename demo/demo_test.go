package demo_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/roles"
)

func TestOptionsValidate(t *testing.T) {
	ok := demo.Options{Agents: 4, Tasks: 12, Kind: demo.KindSim, Timeout: time.Minute}
	tests := []struct {
		name   string
		change func(*demo.Options)
		want   []string // substrings of the error; none: valid
	}{
		{"defaults of the CLI are valid", func(*demo.Options) {}, nil},
		{"one agent is refused", func(o *demo.Options) { o.Agents = 1 }, []string{"need at least 2 agents and 1 task"}},
		{"no task is refused", func(o *demo.Options) { o.Tasks = 0 }, []string{"need at least 2 agents and 1 task"}},
		{"an unknown kind is refused, naming the kinds", func(o *demo.Options) { o.Kind = "gpt" },
			[]string{`unknown kind "gpt" (want one of sim, claude, codex, gemini, opencode, pi, mixed, auto)`}},
		{"no timeout is refused", func(o *demo.Options) { o.Timeout = 0 }, []string{"timeout must be positive"}},
		{"every problem is reported at once", func(o *demo.Options) { o.Agents, o.Kind, o.Timeout = 0, "x", 0 },
			[]string{"need at least", "unknown kind", "timeout"}},
	}
	for _, k := range demo.Kinds {
		tests = append(tests, struct {
			name   string
			change func(*demo.Options)
			want   []string
		}{"kind " + k + " is valid", func(o *demo.Options) { o.Kind = k }, nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got valid, want an error with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// Run refuses bad options before it starts anything.
func TestRunRefusesOneAgent(t *testing.T) {
	err := demo.Run(context.Background(), demo.Options{Agents: 1, Tasks: 1, Timeout: time.Second})
	if err == nil || err.Error() != "demo: need at least 2 agents and 1 task" {
		t.Fatalf("got %v, want the CLI's message", err)
	}
}

// A kind whose CLI is not on PATH is refused before anything starts,
// saying how to install the version fleetd's kind was measured against.
func TestRunSaysHowToInstallAMissingCLI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tt := range []struct{ kind, pkg, version string }{
		{demo.KindClaude, "@anthropic-ai/claude-code", fakeapi.ClaudeVersion},
		{demo.KindCodex, "@openai/codex", fakeapi.CodexVersion},
		{demo.KindGemini, "@google/gemini-cli", fakeapi.GeminiVersion},
		{demo.KindOpenCode, "opencode-ai", fakeapi.OpenCodeVersion},
		{demo.KindPi, "@mariozechner/pi-coding-agent", fakeapi.PiVersion},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			err := demo.Run(t.Context(), demo.Options{Agents: 2, Tasks: 1, Kind: tt.kind, Timeout: time.Minute, Out: io.Discard})
			if err == nil {
				t.Fatal("ran without its CLI")
			}
			for _, want := range []string{
				"--kind " + tt.kind + " needs the " + tt.kind + " CLI",
				"npm install -g " + tt.pkg + "@" + tt.version,
				`export PATH="$(.ci/install-` + tt.kind + `.sh):$PATH"`,
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// --kind mixed needs two real CLIs at least; with fewer it says which it
// found, which are missing, and how to install each of those.
func TestRunMixedNeedsTwoCLIs(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		want       []string
	}{
		{"none", t.TempDir(), []string{"found none; missing claude, codex, gemini, opencode, pi.", "@openai/codex@" + fakeapi.CodexVersion}},
		{"one", bin, []string{"found only codex; missing claude, gemini, opencode, pi."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			err := demo.Run(t.Context(), demo.Options{Agents: 2, Tasks: 1, Kind: demo.KindMixed, Timeout: time.Minute, Out: io.Discard})
			if err == nil {
				t.Fatal("ran without two CLIs")
			}
			want := append([]string{"--kind mixed needs at least two agent CLIs on PATH",
				"npm install -g @anthropic-ai/claude-code@" + fakeapi.ClaudeVersion,
				"npm install -g @google/gemini-cli@" + fakeapi.GeminiVersion + `, or in a clone of fleetd: export PATH="$(.ci/install-gemini.sh):$PATH"`,
				"npm install -g opencode-ai@" + fakeapi.OpenCodeVersion,
				"npm install -g @mariozechner/pi-coding-agent@" + fakeapi.PiVersion}, tt.want...)
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
			if tt.name == "one" && strings.Contains(err.Error(), "@openai/codex") {
				t.Errorf("got %q, which says how to install codex, found on PATH", err)
			}
		})
	}
}

func TestFabricConfigNeedsDirAndRoles(t *testing.T) {
	_, err := demo.StartFabric(context.Background(), demo.FabricConfig{})
	if err == nil || !strings.Contains(err.Error(), "Dir is required") || !strings.Contains(err.Error(), "Roles is required") {
		t.Fatalf("got %v, want both missing fields named", err)
	}
}

// A Fabric runs the gateway with the roles built against its fake API,
// serves the lead shim, and leaves nothing behind once closed.
func TestStartFabricServesTheShim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herdr, the fake API and a gateway")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var apiURL string
	f, err := demo.StartFabric(ctx, demo.FabricConfig{Dir: t.TempDir(), Version: "test",
		Roles: func(api *fakeapi.Server) (roles.Config, error) {
			apiURL = api.URL()
			cfg := roles.Config{Roles: map[string]roles.Role{
				"w-local": {EnvClass: roles.EnvGateway, BaseURL: api.URL(), Tier: 2, Command: []string{"true"}},
			}}
			return cfg, cfg.Validate()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, want := f.API.URL(), apiURL; got != want || got == "" {
		t.Errorf("roles were built against %q, the fabric's API is %q", want, got)
	}
	rs, err := f.Client.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "w-local" {
		t.Errorf("shim's roles: got %+v, want w-local alone", rs)
	}
	if err := f.WaitReady(ctx, nil); err != nil {
		t.Errorf("no agents to wait for: %v", err)
	}
	sock := filepath.Dir(f.Herdr.Path())
	f.Close()
	f.Close() // idempotent
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("herdr's socket dir %s outlived Close: %v", sock, err)
	}
}
