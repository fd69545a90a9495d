package claudehook

import (
	"testing"

	"github.com/fleetd/fleetd/events/eventcore"
)

// The lines are the real Codex 0.169.0's (its rollout, the session meta
// cut short): a turn's tokens come from its token_usage_record, and
// another turn's id finds nothing.
func TestReadCodexUsageFindsTheTurnsRecord(t *testing.T) {
	u, err := ReadCodexUsage("testdata/codex-rollout.jsonl", "01a23cfc-6dd8-7e80-84fb-4c1e141d0b7a", 0)
	want := eventcore.Tokens{In: 13138, Out: 7}
	if err != nil || !u.Ended || u.Tokens != want {
		t.Errorf("usage %+v, %v; want %+v, ended", u, err, want)
	}
	if u, err := ReadCodexUsage("testdata/codex-rollout.jsonl", "01a23cfc-0000-7000-8000-000000000000", 0); err != nil || u.Found {
		t.Errorf("another turn: %+v, %v; want nothing found", u, err)
	}
}
