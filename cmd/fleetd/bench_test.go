package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/bench"
	"github.com/fleetd/fleetd/fakeapi"
)

// runBench runs `fleetd bench args…` (with --json among them) in a home
// of its own and returns its output and report.
func runBench(t *testing.T, args ...string) ([]byte, bench.Report) {
	t.Helper()
	cmd := exec.Command(fleetdBin, append([]string{"bench"}, args...)...)
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench failed: %v\n%s\n%s", err, out, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	return out, rep
}

// fleetd bench --quick --json (at the hidden tiny size) runs every stage
// in both SyncAlways settings and reports every row with a measured value
// and a verdict.
func TestBenchPrintsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole fabric twice (~40 s)")
	}
	out, rep := runBench(t, "--quick", "--json", "--size", "tiny", "--kinds", "none")
	want := []string{
		"whole turn: sim-agent", "agent floor, do-nothing hooks: sim-agent", "agent floor, do-nothing hooks, Enter after herdr's pause: sim-agent", "events per turn: sim-agent", "herdr screen reads per turn, time: sim-agent", "completion:",
		"fabric overhead per turn", "fabric overhead over its hops", "null turn:", "log hop:", "process hop: log hop after a pause", "process hop: HTTP request", "process hop: herdr call", "whole turn: real Claude Code", "whole turn: real Codex", "whole turn: real Gemini CLI", "whole turn: real OpenCode", "whole turn: real Pi", "fan-out:", "hook:",
		"fan-out: CPU per turn, the gateway", "fan-out: CPU per turn, the agents' hooks", "fan-out: CPU per turn, not fleetd",
		"append: Log.Append,", "append: Log.AppendBatch,", "append: Log.AppendMany", "append: Log.AppendBatch vs raw atomic batch", "rebuild: projection fold", "roster: GET /roster",
		"roster: Views.Roster,", "roster: Views.Roster after a change", "memory: gateway RSS", "memory: heap after", "restart: fleetd up ready",
	}
	for _, prefix := range want {
		for _, sync := range []bool{true, false} {
			var row *bench.Row
			for i := range rep.Rows {
				if strings.HasPrefix(rep.Rows[i].Name, prefix) && rep.Rows[i].Sync == sync {
					row = &rep.Rows[i]
				}
			}
			switch {
			case row == nil:
				t.Errorf("no row %q with SyncAlways %v", prefix, sync)
			case row.Status == bench.StatusSkip:
				if row.Note == "" {
					t.Errorf("row %q skipped without saying why", row.Name)
				}
			case row.P50 < 0 || (row.P50 == 0 && !bench.InTicks(row.Name)) || row.N <= 0:
				t.Errorf("row %q (sync %v) has no measurement: %+v", row.Name, sync, *row)
			case row.Target != "" && row.Status != bench.StatusOK && row.Status != bench.StatusMiss:
				t.Errorf("row %q has a target but status %q", row.Name, row.Status)
			}
		}
	}
	// The restart is set beside the embedded server started alone on the
	// same store, so fleetd's own share of it shows; the fan-out's gateway
	// CPU beside the gateway idle for as long.
	for _, r := range rep.Rows {
		if strings.HasPrefix(r.Name, "fan-out: CPU per turn, the gateway") && (r.Base <= 0 || r.BaseName != "idle for as long") {
			t.Errorf("row %q (sync %v): baseline %v %q, want the gateway idle for as long", r.Name, r.Sync, r.Base, r.BaseName)
		}
		if strings.HasPrefix(r.Name, "restart: fleetd up ready") && (r.Base <= 0 || r.BaseName != "NATS alone") {
			t.Errorf("row %q (sync %v): baseline %v %q, want the embedded server alone", r.Name, r.Sync, r.Base, r.BaseName)
		}
	}
	if rep.Machine.Cores == 0 || rep.Mode != "tiny" {
		t.Errorf("report header: %+v, mode %q", rep.Machine, rep.Mode)
	}
	checkCompare(t, out, rep)
}

// checkCompare shows --compare on a real report: against itself nothing
// regresses; against a copy whose RSS row tripled, that row does, and
// --strict exits 3.
func checkCompare(t *testing.T, raw []byte, rep bench.Report) {
	t.Helper()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// --show prints the kept report as the table, every row in it.
	shown, err := exec.Command(fleetdBin, "bench", "--show", old).CombinedOutput()
	if err != nil || !strings.Contains(string(shown), "ROW") || !strings.Contains(string(shown), rep.Rows[len(rep.Rows)-1].Name) {
		t.Errorf("bench --show: %v\n%s", err, shown)
	}
	compare := func(against string) (string, int) {
		cmd := exec.Command(fleetdBin, "bench", "--compare", old, "--against", against, "--strict")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := compare(old); code != 0 || !strings.Contains(out, "0 of ") {
		t.Errorf("a report against itself: exit %d\n%s", code, out)
	}
	worse := rep
	worse.Rows = slices.Clone(rep.Rows)
	var name string
	for i, r := range worse.Rows {
		if strings.HasPrefix(r.Name, "memory: gateway RSS") && r.Sync && r.Status != bench.StatusSkip {
			worse.Rows[i].P50 *= 3
			name = r.Name
		}
	}
	b, err := json.Marshal(worse)
	if err != nil {
		t.Fatal(err)
	}
	against := filepath.Join(dir, "new.json")
	if err := os.WriteFile(against, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := compare(against)
	if code != 3 || !strings.Contains(out, "1 of ") {
		t.Errorf("RSS tripled: exit %d, want 3 and one regression\n%s", code, out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, name) && strings.Contains(line, " on ") && !strings.Contains(line, bench.VerdictRegressed) {
			t.Errorf("the tripled row is not flagged: %q", line)
		}
	}
}

// --cpu-profile DIR leaves one CPU profile per stage and sync setting in
// DIR, each in pprof's format (gzipped protobuf), making DIR first.
func TestBenchWritesACPUProfilePerStage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	cmd := exec.Command(fleetdBin, "bench", "--stages", "micro", "--sync", "off", "--size", "tiny", "--claude", "off", "--json", "--cpu-profile", dir)
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench failed: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "micro-sync-off.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the profile is not gzipped (%d bytes)", len(b))
	}
	if _, err := os.Stat(filepath.Join(dir, "micro-sync-on.pprof")); !os.IsNotExist(err) {
		t.Errorf("a stage that did not run left a profile (%v)", err)
	}
}

// fleetd bench --runtime both runs the fabric stage under herdr and under
// agentapi in one report: the same real-Claude turn against its floor in
// each runtime, each agentapi row right after its herdr peer.
func TestBenchRunsTheFabricUnderBothRuntimes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fabric twice with the real Claude Code")
	}
	requireAgentapi(t)
	fakeapi.RequireClaude(t)
	_, rep := runBench(t, "--stages", "fabric", "--sync", "off", "--size", "tiny", "--kinds", "claude", "--runtime", "both", "--json")
	names := map[string]bool{}
	for i, r := range rep.Rows {
		names[r.Name] = true
		if !strings.HasSuffix(r.Name, bench.UnderAgentapi) {
			continue
		}
		if i == 0 || rep.Rows[i-1].Name+bench.UnderAgentapi != r.Name {
			t.Errorf("row %q does not follow its herdr peer", r.Name)
		}
		// The agents' hooks' CPU is read in 10 ms ticks of their agents'
		// reaped children: a tiny run of fleetd-hook's (≈1.5 ms an exec)
		// may well stay under one tick, a true 0.
		if r.Status != bench.StatusSkip && (r.P50 < 0 || (r.P50 == 0 && !bench.InTicks(r.Name)) || r.N <= 0) {
			t.Errorf("row %q has no measurement: %+v", r.Name, r)
		}
	}
	for _, name := range []string{"whole turn: real Claude Code + fake API", "whole turn: sim-agent, think 0"} {
		for _, n := range []string{name, name + bench.UnderAgentapi} {
			var row *bench.Row
			for i := range rep.Rows {
				if rep.Rows[i].Name == n {
					row = &rep.Rows[i]
				}
			}
			switch {
			case row == nil:
				t.Errorf("no row %q in %v", n, slices.Collect(maps.Keys(names)))
			case row.P50 <= 0 || row.Base <= 0 || row.BaseName == "":
				t.Errorf("row %q is not set against its floor: %+v", n, *row)
			}
		}
	}
}
