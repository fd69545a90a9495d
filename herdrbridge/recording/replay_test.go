package recording_test

import (
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/recording"
)

// updateDecisions rewrites each recording's decisions with what the
// replay says now: for when the replay itself learns to say more (a new
// decision of the bridge joins it), never to accept what a kind's
// change did to recorded screens — that is re-recorded and reviewed
// (README). go test ./herdrbridge/recording -run TestRecordingsReplay -args -update-decisions
var updateDecisions = flag.Bool("update-decisions", false, "rewrite the recordings' decisions with the replay's")

// Every recording in testdata replays through the kind's decision code to
// the decisions it was recorded with, and they agree with what the bridge
// did then. No CLI is needed: this is the regression test a CLI update is
// caught by (re-record, read the diff; see the package doc).
func TestRecordingsReplayToTheirDecisions(t *testing.T) {
	files, err := recording.All("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recordings in testdata")
	}
	for _, path := range files {
		rel, _ := filepath.Rel("testdata", path)
		t.Run(rel, func(t *testing.T) {
			rec, err := recording.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			k, err := herdrbridge.KindOf(rec.Kind)
			if err != nil {
				t.Fatal(err)
			}
			if *updateDecisions {
				res := recording.Replay(k, rec)
				if len(res.Problems) > 0 {
					t.Fatalf("not rewritten, the replay finds problems: %v", res.Problems)
				}
				rec.Decisions = res.Decisions
				if err := recording.Save(path, rec); err != nil {
					t.Fatal(err)
				}
			}
			if len(rec.Decisions) == 0 {
				t.Fatalf("%s has no decisions", rel)
			}
			if err := recording.Check(k, rec); err != nil {
				t.Error(err)
			}
		})
	}
}

// A recording is where it says it is: testdata/<kind>/<cli version>/<scenario>.json.gz.
func TestRecordingsAreFiledByKindVersionAndScenario(t *testing.T) {
	files, _ := recording.All("testdata")
	for _, path := range files {
		rec, err := recording.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := recording.Path("testdata", rec.Kind, rec.Versions.CLI, rec.Scenario); path != want {
			t.Errorf("%s holds %s / %s of %s: want it at %s", path, rec.Kind, rec.Scenario, rec.Versions.CLI, want)
		}
	}
}

// loadScenario loads the recording of kind's scenario (its only version,
// or the last).
func loadScenario(t *testing.T, kind, scenario string) *recording.Recording {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", kind, "*", scenario+".json.gz"))
	if len(files) == 0 {
		t.Fatalf("no recording of %s / %s", kind, scenario)
	}
	rec, err := recording.Load(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// lastReadBefore is the index in rec.Steps of the last read of a screen
// before the first step of op.
func lastReadBefore(t *testing.T, rec *recording.Recording, op string) int {
	t.Helper()
	last := -1
	for i, st := range rec.Steps {
		if st.Op == op {
			if last < 0 {
				t.Fatalf("no read before the first %s", op)
			}
			return last
		}
		if st.Op == recording.OpRead {
			last = i
		}
	}
	t.Fatalf("no %s step", op)
	return -1
}

// A CLI that drew its prompt character differently would leave fleetd
// with no prompt box to type into. Altering the one screen the bridge
// read before it typed — "❯" becomes ">" — makes the replay fail, and
// the failure names the look whose decision changed (ready → no prompt
// box) and the typing that no longer follows from it.
func TestAnAlteredScreenFailsTheReplayNamingTheDecision(t *testing.T) {
	rec := loadScenario(t, "claude", "one-line-turn")
	k, _ := herdrbridge.KindOf(rec.Kind)
	if err := recording.Check(k, rec); err != nil {
		t.Fatalf("the unaltered recording does not replay: %v", err)
	}
	i := lastReadBefore(t, rec, recording.OpInput)
	screen := rec.Steps[i].Screen
	if !strings.Contains(rec.Screens[screen], "❯") {
		t.Fatalf("the screen read before the typing has no ❯:\n%s", rec.Screens[screen])
	}
	// A screen of its own, so that no other read of the same screen
	// changes with it.
	rec.Screens = append(rec.Screens, strings.ReplaceAll(rec.Screens[screen], "❯", ">"))
	rec.Steps[i].Screen = len(rec.Screens) - 1

	err := recording.Check(k, rec)
	if err == nil {
		t.Fatal("the replay of the altered screen passed")
	}
	msg := err.Error()
	for _, want := range []string{
		"the decisions changed",
		"+ read ",
		"composer=none → " + herdrbridge.AttentionNoPromptBox,
		"- read ",
		"composer=empty → " + herdrbridge.ScreenReady,
		"typed into pane-1 after a look that said \"" + herdrbridge.AttentionNoPromptBox + "\", not ready",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	t.Logf("the failure reads:\n%s", msg)
}

// stepIndex is the index in rec.Steps of the first step from `from` that
// match says is the one.
func stepIndex(t *testing.T, rec *recording.Recording, from int, what string, match func(recording.Step) bool) int {
	t.Helper()
	for i := from; i < len(rec.Steps); i++ {
		if match(rec.Steps[i]) {
			return i
		}
	}
	t.Fatalf("%s / %s has no %s", rec.Kind, rec.Scenario, what)
	return -1
}

// readBefore is the index of the last read before step i.
func readBefore(t *testing.T, rec *recording.Recording, i int) int {
	t.Helper()
	for j := i - 1; j >= 0; j-- {
		if rec.Steps[j].Op == recording.OpRead {
			return j
		}
	}
	t.Fatalf("%s / %s: no read before step %d", rec.Kind, rec.Scenario, i)
	return -1
}

func isAttention(reason string) func(recording.Step) bool {
	return func(st recording.Step) bool {
		r, _ := st.Data["reason"].(string)
		return st.Op == recording.OpLog && st.Event == "attention" && r == reason
	}
}

func isEnter(st recording.Step) bool {
	return st.Op == recording.OpKeys && slices.Equal(st.Keys, []string{"enter"})
}

// The timed decisions replay on the recording's own clock, so a timing
// that changed fails the replay, naming the decision: the typing gate
// (herdrbridge.Settle) that calls for a person only once a prompt box
// stayed away AttentionAfter, and EnterAfter that presses Enter only once
// the text landed or the pause passed. Each case alters one recorded
// time, or drops one event, of a recording that replays clean.
func TestAnAlteredTimingFailsTheReplayNamingTheDecision(t *testing.T) {
	for _, c := range []struct {
		name, kind, scenario string
		alter                func(t *testing.T, rec *recording.Recording)
		want                 []string
	}{{
		name: "the attention for a missing prompt box came 6 s into its wait, not 10",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) {
			att := stepIndex(t, rec, 0, "attention no_prompt_box", isAttention(herdrbridge.AttentionNoPromptBox))
			look := readBefore(t, rec, att)
			earlier := rec.Steps[readBefore(t, rec, look)].At + 100
			rec.Steps[look].At, rec.Steps[att].At = earlier, earlier
		},
		want: []string{
			"the decisions changed",
			"settle=attention(" + herdrbridge.AttentionNoPromptBox + ")",
			"the typing gate (Settle) said wait at read 10",
			"under AttentionAfter (10s)",
		},
	}, {
		name: "the attention for a missing prompt box never came",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) {
			att := stepIndex(t, rec, 0, "attention no_prompt_box", isAttention(herdrbridge.AttentionNoPromptBox))
			rec.Steps = slices.Delete(rec.Steps, att, att+1)
		},
		want: []string{
			"read 10 (at 11.602s): the typing gate (Settle) called for attention " + herdrbridge.AttentionNoPromptBox,
			"and the bridge recorded none",
		},
	}, {
		name: "Enter went 120 ms after a paste into Codex, before the pause",
		kind: "codex", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) {
			in := stepIndex(t, rec, 0, "paste", func(st recording.Step) bool { return st.Op == recording.OpInput })
			enter := stepIndex(t, rec, in, "Enter", isEnter)
			rec.Steps[enter].At = rec.Steps[in].At + 120
			if look := readBefore(t, rec, enter); look > in {
				rec.Steps[look].At = rec.Steps[enter].At
			}
		},
		want: []string{
			"- turn <ulid-1>: keys[enter]: " + herdrbridge.EnterPause,
			"+ turn <ulid-1>: keys[enter]: " + herdrbridge.EnterNotYet,
			"turn <ulid-1>: keys[enter] 120ms after the text, before the pause (300ms): EnterAfter says wait",
		},
	}, {
		name: "Enter went into Claude Code's box while a look said the paste had not landed",
		kind: "claude", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) {
			enter := stepIndex(t, rec, 0, "Enter", isEnter)
			// The look that said landed goes: the one before it said
			// pending.
			rec.Steps = slices.Delete(rec.Steps, enter-1, enter)
		},
		want: []string{
			"- turn <ulid-1>: keys[enter]: " + herdrbridge.EnterLanded,
			"+ turn <ulid-1>: keys[enter]: " + herdrbridge.EnterNotYet,
			"when the last look at the composer (read 3",
			"said wait (EnterAfter)",
		},
	}, {
		name: "Claude Code's box showed the paste whole, and the bridge looked again",
		kind: "claude", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) {
			enter := stepIndex(t, rec, 0, "Enter", isEnter)
			again := rec.Steps[enter-1]
			again.At += 10
			rec.Steps = slices.Insert(rec.Steps, enter, again)
		},
		want: []string{
			"+ reads 4-5 pane-1:",
			"turn <ulid-1>: read 4 said landed 24ms after the text (EnterAfter), and the bridge looked again (read 5) instead of pressing Enter",
		},
	}, {
		name: "the statuses of the agent's own turn came before it was typed",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) {
			typed := stepIndex(t, rec, 0, "typing", func(st recording.Step) bool { return st.Op == recording.OpLog && st.Event == "typed" })
			look := readBefore(t, rec, readBefore(t, rec, typed)) // the first of the two looks before it
			// herdr's and the hook's "working", moved half a second
			// before the looks that decided on typing.
			var moved []recording.Step
			for _, source := range []string{"hook", "herdr"} {
				i := stepIndex(t, rec, typed, source+"'s working", func(st recording.Step) bool {
					return st.Op == recording.OpLog && st.Event == "status" && st.Data["source"] == source && st.Data["status"] == "working"
				})
				st := rec.Steps[i]
				st.At = rec.Steps[look].At - 500
				moved = append(moved, st)
				rec.Steps = slices.Delete(rec.Steps, i, i+1)
			}
			rec.Steps = slices.Insert(rec.Steps, look, moved...)
		},
		want: []string{
			"+ reads 11-12 pane-1: composer=empty → ready statuses=held(",
			"turn <ulid-5>: typed into pane-1 while the statuses said held(" + herdrbridge.HeldByHerdr,
			"herdr's last word working, the hooks' working",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			rec := loadScenario(t, c.kind, c.scenario)
			k, _ := herdrbridge.KindOf(rec.Kind)
			if err := recording.Check(k, rec); err != nil {
				t.Fatalf("the unaltered recording does not replay: %v", err)
			}
			c.alter(t, rec)
			err := recording.Check(k, rec)
			if err == nil {
				t.Fatal("the replay of the altered recording passed")
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the failure does not say %q:\n%s", want, err)
				}
			}
			t.Logf("the failure reads:\n%s", err)
		})
	}
}
