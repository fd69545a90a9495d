package claudehook

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
)

func TestReadUsage(t *testing.T) {
	const fixture = "testdata/transcript.jsonl"
	second := events.Tokens{In: 450, Out: 70, CacheRead: 250, CacheCreation: 10}
	tests := []struct {
		name     string
		promptID string
		max      int64
		want     Usage
	}{
		{"last turn sums every message once, across a tool round", "p2", 0,
			Usage{Model: "claude-opus-5-5", Tokens: second, CostUSD: 0.025, Found: true, Ended: true}},
		{"empty prompt id means the last turn", "", 0,
			Usage{Model: "claude-opus-5-5", Tokens: second, CostUSD: 0.025, Found: true, Ended: true}},
		{"earlier turn stops at the next prompt; cost from the session start", "p1", 0,
			Usage{Model: "claude-opus-5-5", Tokens: events.Tokens{In: 100, Out: 20, CacheRead: 50, CacheCreation: 5}, CostUSD: 0.01, Found: true, Ended: true}},
		{"unknown prompt finds nothing", "nope", 0, Usage{}},
		{"cap before the prompt line finds nothing", "p2", 600, Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadUsage(fixture, tt.promptID, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if got.Model != tt.want.Model || got.Tokens != tt.want.Tokens || got.Found != tt.want.Found || got.Ended != tt.want.Ended ||
				math.Abs(got.CostUSD-tt.want.CostUSD) > 1e-9 {
				t.Errorf("ReadUsage(%q) = %+v, want %+v", tt.promptID, got, tt.want)
			}
		})
	}
}

func TestReadUsageCostFromModelUsage(t *testing.T) {
	path := writeLines(t,
		`{"type":"user","promptId":"a"}`,
		`{"type":"assistant","message":{"id":"m1","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"cost-state","modelUsage":{"x":{"costUSD":0.5},"y":{"costUSD":0.25}}}`,
		`{"type":"user","promptId":"b"}`,
		`not json at all`,
		`{"type":"assistant","message":{"id":"m2","model":"x","usage":{"input_tokens":2,"output_tokens":3}}}`,
		`{"type":"assistant","message":{"id":"m3","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}`,
		`{"type":"cost-state","modelUsage":{"x":{"costUSD":1.0},"y":{"costUSD":0.25}}}`,
	)
	got, err := ReadUsage(path, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (events.Tokens{In: 2, Out: 3}); got.Tokens != want || got.Model != "x" || math.Abs(got.CostUSD-0.5) > 1e-9 {
		t.Errorf("got %+v, want tokens %+v, model x, cost 0.5", got, want)
	}
}

func TestReadUsageLongSessionReadsOnlyTheTail(t *testing.T) {
	var lines []string
	for i := range 3000 {
		lines = append(lines,
			fmt.Sprintf(`{"type":"user","promptId":"p%d","message":{"content":%q}}`, i, strings.Repeat("x", 200)),
			fmt.Sprintf(`{"type":"assistant","message":{"id":"m%d","model":"m","usage":{"input_tokens":%d,"output_tokens":1}}}`, i, i),
			fmt.Sprintf(`{"type":"cost-state","totalCostUSD":%d}`, i+1))
	}
	path := writeLines(t, lines...)
	got, err := ReadUsage(path, "p2999", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tokens.In != 2999 || got.CostUSD != 1 {
		t.Errorf("got %+v, want in 2999, cost 1", got)
	}
	if _, err := ReadUsage(filepath.Join(t.TempDir(), "missing.jsonl"), "p", 0); err == nil {
		t.Error("a missing transcript read without error")
	}
}

func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
