package claudehook

import (
	"testing"

	"github.com/fleetd/fleetd/events/eventcore"
)

// The lines are the ones fleetd's plugin wrote in the real OpenCode
// 1.18.33: a turn's tokens come from its line, and another prompt's id
// finds nothing.
func TestReadOpenCodeUsageFindsTheTurnsLine(t *testing.T) {
	u, err := ReadOpenCodeUsage("testdata/opencode-usage.jsonl", "msg_23d6c2462001v8NP52CSpMPsHb", 0)
	want := eventcore.Tokens{In: 7989, Out: 3}
	if err != nil || !u.Ended || u.Tokens != want || u.Model != "fake-model" {
		t.Errorf("usage %+v, %v; want %+v from fake-model, ended", u, err, want)
	}
	if u, err := ReadOpenCodeUsage("testdata/opencode-usage.jsonl", "msg_00000000000000000000000000", 0); err != nil || u.Found {
		t.Errorf("another prompt: %+v, %v; want nothing found", u, err)
	}
	if usageReaders["opencode"] == nil {
		t.Error("no usage reader for the opencode kind")
	}
}
