package recording_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// readNo is the number of the read at step i (reads count from 1), or of
// the last read before it.
func readNo(rec *recording.Recording, i int) int {
	n := 0
	for _, st := range rec.Steps[:i+1] {
		if st.Op == recording.OpRead {
			n++
		}
	}
	return n
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
		alter                func(t *testing.T, rec *recording.Recording) (more []string)
		want                 []string
	}{{
		name: "the attention for a missing prompt box came 6 s into its wait, not 10",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			att := stepIndex(t, rec, 0, "attention no_prompt_box", isAttention(herdrbridge.AttentionNoPromptBox))
			look := readBefore(t, rec, att)
			earlier := rec.Steps[readBefore(t, rec, look)].At + 100
			rec.Steps[look].At, rec.Steps[att].At = earlier, earlier
			return []string{fmt.Sprintf("the typing gate (Settle) said wait at read %d", readNo(rec, look))}
		},
		want: []string{
			"the decisions changed",
			"settle=attention(" + herdrbridge.AttentionNoPromptBox + ")",
			"under AttentionAfter (10s)",
		},
	}, {
		name: "the attention for a missing prompt box never came",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			att := stepIndex(t, rec, 0, "attention no_prompt_box", isAttention(herdrbridge.AttentionNoPromptBox))
			look := readBefore(t, rec, att)
			rec.Steps = slices.Delete(rec.Steps, att, att+1)
			return []string{fmt.Sprintf("read %d (at %s): the typing gate (Settle) called for attention %s",
				readNo(rec, look), time.Duration(rec.Steps[look].At)*time.Millisecond, herdrbridge.AttentionNoPromptBox)}
		},
		want: []string{
			"and the bridge recorded none",
		},
	}, {
		name: "Enter went 120 ms after a paste into Codex, before the pause",
		kind: "codex", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			in := stepIndex(t, rec, 0, "paste", func(st recording.Step) bool { return st.Op == recording.OpInput })
			enter := stepIndex(t, rec, in, "Enter", isEnter)
			rec.Steps[enter].At = rec.Steps[in].At + 120
			if look := readBefore(t, rec, enter); look > in {
				rec.Steps[look].At = rec.Steps[enter].At
			}
			return nil
		},
		want: []string{
			"- turn <ulid-1>: keys[enter]: " + herdrbridge.EnterPause,
			"+ turn <ulid-1>: keys[enter]: " + herdrbridge.EnterNotYet,
			"turn <ulid-1>: keys[enter] 120ms after the text, before the pause (300ms): EnterAfter says wait",
		},
	}, {
		name: "Enter went into Claude Code's box while a look said the paste had not landed",
		kind: "claude", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			enter := stepIndex(t, rec, 0, "Enter", isEnter)
			// The look that said landed goes: the one before it said
			// pending.
			rec.Steps = slices.Delete(rec.Steps, enter-1, enter)
			return []string{fmt.Sprintf("when the last look at the composer (read %d", readNo(rec, readBefore(t, rec, enter-1)))}
		},
		want: []string{
			"- turn <ulid-1>: keys[enter]: " + herdrbridge.EnterLanded,
			"+ turn <ulid-1>: keys[enter]: " + herdrbridge.EnterNotYet,
			"said wait (EnterAfter)",
		},
	}, {
		name: "Claude Code's box showed the paste whole, and the bridge looked again",
		kind: "claude", scenario: "one-line-turn",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			enter := stepIndex(t, rec, 0, "Enter", isEnter)
			again := rec.Steps[enter-1]
			again.At += 10
			rec.Steps = slices.Insert(rec.Steps, enter, again)
			n := readNo(rec, enter)
			return []string{fmt.Sprintf("+ reads %d-%d pane-1:", n-1, n),
				fmt.Sprintf("turn <ulid-1>: read %d said landed", n-1),
				fmt.Sprintf("after the text (EnterAfter), and the bridge looked again (read %d) instead of pressing Enter", n)}
		},
		want: nil,
	}, {
		name: "the statuses of the agent's own turn came before it was typed",
		kind: "claude", scenario: "dialog",
		alter: func(t *testing.T, rec *recording.Recording) []string {
			typed := stepIndex(t, rec, 0, "typing", func(st recording.Step) bool { return st.Op == recording.OpLog && st.Event == "typed" })
			turn := rec.Steps[typed].Turn
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
			n := readNo(rec, look+len(moved))
			return []string{fmt.Sprintf("+ reads %d-%d pane-1: composer=empty → ready statuses=held(", n, n+1),
				"turn " + turn + ": typed into pane-1 while the statuses said held(" + herdrbridge.HeldByHerdr}
		},
		want: []string{
			"herdr's last word working, the hooks' working",
		},
	}} {
		t.Run(c.name, func(t *testing.T) { alteredFails(t, c.kind, c.scenario, c.alter, c.want...) })
	}
}

// alteredFails checks that kind's scenario replays clean, and that once
// alter has altered it the replay fails saying each of want and of what
// alter returns (what names a read or a time of that recording).
func alteredFails(t *testing.T, kind, scenario string, alter func(*testing.T, *recording.Recording) []string, want ...string) {
	t.Helper()
	rec := loadScenario(t, kind, scenario)
	k, _ := herdrbridge.KindOf(rec.Kind)
	if err := recording.Check(k, rec); err != nil {
		t.Fatalf("the unaltered recording does not replay: %v", err)
	}
	want = append(want, alter(t, rec)...)
	err := recording.Check(k, rec)
	if err == nil {
		t.Fatal("the replay of the altered recording passed")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the failure does not say %q:\n%s", w, err)
		}
	}
	t.Logf("the failure reads:\n%s", err)
}

// beforeStep is the index of the step at time 0 that says what the
// bridge had been told of status (recording.BeforeHook…) when the
// recording began.
func beforeStep(t *testing.T, rec *recording.Recording, status string) int {
	t.Helper()
	return stepIndex(t, rec, 0, "step before it began saying "+status, func(st recording.Step) bool {
		return st.Op == recording.OpBefore && st.Event == status
	})
}

// noneBefore fails the test when a step before the typing matches: the
// alteration would not hold until the typing.
func noneBefore(t *testing.T, rec *recording.Recording, what string, match func(recording.Step) bool) {
	t.Helper()
	typed := stepIndex(t, rec, 0, "typing", func(st recording.Step) bool { return st.Op == recording.OpLog && st.Event == "typed" })
	for i, st := range rec.Steps[:typed] {
		if st.Op != recording.OpBefore && match(st) {
			t.Fatalf("%s / %s: %s before the typing (step %d: %+v)", rec.Kind, rec.Scenario, what, i, st)
		}
	}
}

// A recording begins with what the bridge had been told of the agent's
// statuses (recording.Before, the steps at time 0), so the replay weighs
// them (herdrbridge.Statuses.Hold) as the bridge did instead of taking
// each both ways: one altered so that the statuses held the agent back
// until it was typed into fails, naming the decision.
func TestAnAlteredStatusBeforeTheRecordingFailsTheReplayNamingTheDecision(t *testing.T) {
	t.Run("the hooks said working, herdr named no agent, and nothing said idle before the typing", func(t *testing.T) {
		alteredFails(t, "codex", "multi-line-paste", func(t *testing.T, rec *recording.Recording) []string {
			if st := rec.Steps[beforeStep(t, rec, recording.BeforeHerdr)]; st.Text != "" {
				t.Fatalf("herdr names %q in the pane: its word, not the hooks', counts", st.Text)
			}
			noneBefore(t, rec, "a hook status", func(st recording.Step) bool {
				return st.Op == recording.OpLog && st.Event == "status" && st.Data["source"] == "hook"
			})
			rec.Steps[beforeStep(t, rec, recording.BeforeHook)].State = "working"
			return nil
		},
			"+ read 1 pane-1: composer=empty → ready statuses=held("+herdrbridge.HeldByHooks+") settle=type",
			"typed into pane-1 while the statuses said held("+herdrbridge.HeldByHooks+") (Statuses.Hold)",
			"the hooks' working",
		)
	})
	t.Run("herdr said working, the hooks idle, and the bridge typed without asking herdr", func(t *testing.T) {
		alteredFails(t, "claude", "one-line-turn", func(t *testing.T, rec *recording.Recording) []string {
			noneBefore(t, rec, "a word of herdr's", func(st recording.Step) bool { return st.Op == recording.OpHerdr })
			rec.Steps[beforeStep(t, rec, recording.BeforeHerdr)].State = "working"
			return nil
		},
			"+ read 1 pane-1: composer=empty → ready statuses=held("+herdrbridge.HeldHerdrBehind+") settle=type",
			"typed into pane-1 while the statuses said held("+herdrbridge.HeldHerdrBehind+") (Statuses.Hold): herdr's last word working, the hooks' idle",
		)
	})
}

// A recording made before recordings began with the statuses (and kept
// herdr's answers) still replays: each status it does not tell is taken
// both ways, and none holds back a typing.
func TestARecordingWithoutItsStatusesBeforeStillReplays(t *testing.T) {
	files, _ := recording.All("testdata")
	for _, path := range files {
		rec, err := recording.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := herdrbridge.KindOf(rec.Kind)
		rec.Steps = slices.DeleteFunc(rec.Steps, func(st recording.Step) bool {
			return st.Op == recording.OpBefore || st.Op == recording.OpHerdr && (st.Event == "agent_get" || st.Event == "pane_get")
		})
		if res := recording.Replay(k, rec); len(res.Problems) > 0 {
			t.Errorf("%s without its statuses before: %q", path, res.Problems)
		}
	}
}
