package demo_test

import (
	"context"
	"errors"
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
		{"an unknown kind is refused", func(o *demo.Options) { o.Kind = "gpt" }, []string{`unknown kind "gpt"`}},
		{"no timeout is refused", func(o *demo.Options) { o.Timeout = 0 }, []string{"timeout must be positive"}},
		{"every problem is reported at once", func(o *demo.Options) { o.Agents, o.Kind, o.Timeout = 0, "x", 0 },
			[]string{"need at least", "unknown kind", "timeout"}},
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
