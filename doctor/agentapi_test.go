package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// No herdr, but agentapi on PATH: 'fleetd up' runs the agents under
// agentapi, so the runtime line is ok and says so; an agentapi too old is
// a failure that says what to install.
func TestRuntimeLineWithAgentapiInsteadOfHerdr(t *testing.T) {
	bin := t.TempDir()
	fake := func(version string) {
		script := "#!/bin/sh\necho 'agentapi version " + version + "'\n"
		if err := os.WriteFile(filepath.Join(bin, "agentapi"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	cfg := Config{Herdr: filepath.Join(t.TempDir(), "none.sock"), DataDir: t.TempDir(), Timeout: 2 * time.Second}

	fake("0.12.1")
	r := checkHerdr(context.Background(), cfg)[0]
	if r.Status != OK || !strings.Contains(r.Detail, "agentapi 0.12.1 on PATH") || !strings.Contains(r.Detail, "no herdr socket at") {
		t.Errorf("agentapi 0.12.1 on PATH: %+v", r)
	}
	fake("0.9.0")
	r = checkHerdr(context.Background(), cfg)[0]
	if r.Status != Fail || !strings.Contains(r.Detail, "unsupported agentapi version") || !strings.Contains(r.Fix, "install agentapi") {
		t.Errorf("agentapi 0.9.0 on PATH: %+v", r)
	}
}
