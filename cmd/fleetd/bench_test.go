package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/bench"
)

// fleetd bench --quick --json (at the hidden tiny size) runs every stage
// in both SyncAlways settings and reports every row with a measured value
// and a verdict.
func TestBenchPrintsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole fabric twice (~40 s)")
	}
	cmd := exec.Command(fleetdBin, "bench", "--quick", "--json", "--size", "tiny", "--claude", "off")
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
	want := []string{
		"whole turn: sim-agent", "agent floor: sim-agent", "events per turn: sim-agent", "completion:",
		"fabric overhead per turn", "log hop:", "whole turn: real Claude Code", "fan-out:", "hook:",
		"append: Log.Append,", "append: Log.AppendBatch,", "rebuild: projection fold", "roster: GET /roster",
		"roster: Views.Roster", "memory: gateway RSS", "memory: heap after",
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
			case row.P50 <= 0 || row.N <= 0:
				t.Errorf("row %q (sync %v) has no measurement: %+v", row.Name, sync, *row)
			case row.Target != "" && row.Status != bench.StatusOK && row.Status != bench.StatusMiss:
				t.Errorf("row %q has a target but status %q", row.Name, row.Status)
			}
		}
	}
	if rep.Machine.Cores == 0 || rep.Mode != "tiny" {
		t.Errorf("report header: %+v, mode %q", rep.Machine, rep.Mode)
	}
}
