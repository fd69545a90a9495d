package bench_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/bench"
)

// RunAll runs the plan's stages in table order, each in every SyncAlways
// setting, and turns a failed stage into a fail row and an error.
func TestRunAllKeepsOrderAndReportsFailedStages(t *testing.T) {
	size, _ := bench.SizeNamed("tiny")
	var ran []string
	boom := errors.New("boom")
	run := func(_ context.Context, stage string, sync bool) ([]bench.Row, error) {
		ran = append(ran, stage)
		if stage == "rebuild" && !sync {
			return nil, boom
		}
		return []bench.Row{{Name: stage + ": a row", Sync: sync, Status: bench.StatusNone}}, nil
	}
	rep, err := bench.RunAll(context.Background(), bench.Plan{Stages: []string{"rebuild", "micro"}, Size: size, Progress: io.Discard}, run)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rebuild (sync off)") {
		t.Errorf("got error %v, want the rebuild stage's, named with its sync", err)
	}
	if got, want := ran, []string{"micro", "micro", "rebuild", "rebuild"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v (table order, on then off)", got, want)
	}
	if rep.Mode != "tiny" || len(rep.Rows) != 4 {
		t.Fatalf("report: mode %q, %d rows, want tiny and 4", rep.Mode, len(rep.Rows))
	}
	var fail *bench.Row
	for i, r := range rep.Rows {
		if r.Status == bench.StatusFail {
			fail = &rep.Rows[i]
		}
	}
	if fail == nil || fail.Name != "rebuild stage" || fail.Sync || fail.Note != "boom" {
		t.Errorf("fail row: got %+v, want rebuild stage, sync off, noting the error", fail)
	}
}

func TestPlanValidateNamesUnknownStages(t *testing.T) {
	err := bench.Plan{Stages: []string{"micro", "warp", "turbo"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `unknown stage "warp"`) || !strings.Contains(err.Error(), `unknown stage "turbo"`) {
		t.Fatalf("got %v, want both unknown stages named", err)
	}
	ran := false
	_, err = bench.RunAll(context.Background(), bench.Plan{Stages: []string{"warp"}}, func(context.Context, string, bool) ([]bench.Row, error) {
		ran = true
		return nil, nil
	})
	if err == nil || ran {
		t.Errorf("an invalid plan ran (%v) or passed (%v)", ran, err)
	}
}

func TestSizeNamedHasTheCLIsSizes(t *testing.T) {
	for _, name := range []string{"full", "quick", "tiny"} {
		s, ok := bench.SizeNamed(name)
		if !ok || s.Name != name || s.Turns <= 0 || s.Think <= 0 || s.TurnsHigh <= s.TurnsLow {
			t.Errorf("size %s: got %+v, %v", name, s, ok)
		}
	}
	if _, ok := bench.SizeNamed("huge"); ok {
		t.Error("an unknown size was found")
	}
}

func TestRunStageRefusesUnknownStage(t *testing.T) {
	_, err := bench.RunStage(context.Background(), bench.StageConfig{Stage: "warp", Fleetd: "/bin/false", Progress: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `unknown stage "warp"`) {
		t.Fatalf("got %v", err)
	}
}

// The bench's flags pick a size and its SyncAlways settings.
func TestSizeForAndSyncsNamed(t *testing.T) {
	if s := bench.SizeFor("", false, 0); s.Name != "full" {
		t.Errorf("default size %q, want full", s.Name)
	}
	if s := bench.SizeFor("", true, 5*time.Second); s.Name != "quick" || s.Think != 5*time.Second {
		t.Errorf("--quick --fan-out-think 5s: %q, T %s", s.Name, s.Think)
	}
	if s := bench.SizeFor("tiny", true, 0); s.Name != "tiny" {
		t.Errorf("--size tiny --quick: %q, want tiny", s.Name)
	}
	for name, want := range map[string][]bool{"on": {true}, "off": {false}, "both": nil} {
		if got := bench.SyncsNamed(name); !slices.Equal(got, want) {
			t.Errorf("SyncsNamed(%s) = %v, want %v", name, got, want)
		}
	}
}

// ServeStage writes nothing for a stage that cannot run, so InChild
// reports the child's failure rather than rows.
func TestServeStageWritesNoRowsForAStageThatFails(t *testing.T) {
	var out strings.Builder
	size, _ := bench.SizeNamed("tiny")
	if err := bench.ServeStage(context.Background(), bench.StageConfig{Stage: "nope", Size: size, Progress: io.Discard}, &out); err == nil || out.Len() != 0 {
		t.Errorf("ServeStage(nope) = %v, wrote %q", err, out.String())
	}
}
