package claudehook

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetd/fleetd/events/eventcore"
)

// The session is the real Pi 0.73.1's: a plain turn, then a turn whose
// model called Pi's read tool and answered after its result. The last
// turn's tokens are both its requests'; a file cut before the answer is
// not ended; a session of no turn finds nothing.
func TestReadPiUsageSumsTheLastTurn(t *testing.T) {
	const path = "testdata/pi-session.jsonl"
	u, err := ReadPiUsage(path, "any", 0)
	want := eventcore.Tokens{In: 1420 + 1490, Out: 6 + 19}
	if err != nil || !u.Found || !u.Ended || u.Tokens != want || u.Model != "fake-model" {
		t.Errorf("usage %+v, %v; want %+v, ended, fake-model", u, err, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	// Up to the tool call: the turn has not ended.
	if err := os.WriteFile(cut, bytes.Join(lines[:7], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := ReadPiUsage(cut, "", 0); err != nil || !u.Found || u.Ended || u.Tokens.In != 1420 {
		t.Errorf("a turn cut at its tool call: %+v, %v; want found, not ended", u, err)
	}
	if err := os.WriteFile(cut, bytes.Join(lines[:3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := ReadPiUsage(cut, "", 0); err != nil || u.Found {
		t.Errorf("a session of no turn: %+v, %v; want nothing found", u, err)
	}
	if usageReaders["pi"] == nil {
		t.Errorf("no usage reader for the pi kind")
	}
}
