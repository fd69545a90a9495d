package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
)

// The texts whose Enter could be taken as a newline or split the paste —
// several lines, pieces, a text taller than the box, a leading "!" and a
// trailing backslash, mode characters and wide characters — each reach
// the real Claude Code whole and once (checkText), submitted by the first
// Enter, pressed when the box showed the text: round after round, beside
// a busy loop on one core. FLEET_LANDING_ROUNDS sets the rounds (default
// 3; each is about 10 s); FLEET_LANDING_NOBUSY=1 leaves the busy loop out,
// to compare.
func TestRealClaudeTakesEveryTextWholeWhenEnterFollowsTheSign(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("FLEET_LANDING_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rounds)*time.Minute+3*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, nil)}
	}, "--submit-timeout", "30s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "t-1", "w-local", "work")
	fleet.waitReady(ctx, 90*time.Second, "t-1")
	if os.Getenv("FLEET_LANDING_NOBUSY") == "" {
		busy(t)
	}

	var tall []string
	for i := range 60 {
		tall = append(tall, fmt.Sprintf("row %02d of a text taller than the box", i))
	}
	var pieces strings.Builder
	for i := 0; pieces.Len() < 2000; i++ {
		fmt.Fprintf(&pieces, "line %04d: the quick brown fox jumps over the lazy dog\n", i)
	}
	cases := []textCase{
		{name: "one line", text: "a prompt", delivery: "paste"},
		{name: "several lines", text: "code:\n    func main() {\n        fmt.Println(\"hi\")\n    }\nend of code", delivery: "pieces"},
		{name: "2 KB in pieces", text: pieces.String() + "end.", delivery: "pieces"},
		{name: "taller than the box", text: strings.Join(tall, "\n"), delivery: "pieces"},
		{name: "a bang over lines", text: "!touch PWNED-landing.txt\nand a second line", delivery: "pieces"},
		{name: "a trailing backslash", text: "a path:\nC:\\", delivery: "pieces"},
		{name: "mode and wide characters", text: "? what\n#x &y @z naïve café — 日本語 ❯ ✓ 🎉", delivery: "paste"},
	}
	started := time.Now()
	var whole []time.Duration
	for r := range rounds {
		for _, tc := range cases {
			tc.status = 200
			// Each round's texts differ (the model gets each once), the
			// label after the first line, where it moves no hazard.
			if first, rest, ok := strings.Cut(tc.text, "\n"); ok {
				tc.text = fmt.Sprintf("%s\n(round %d, %s)\n%s", first, r, tc.name, rest)
			} else {
				tc.text = fmt.Sprintf("%s (round %d)", tc.text, r)
			}
			t.Run(fmt.Sprintf("%d/%s", r, tc.name), func(t *testing.T) {
				fleet.t = t
				before := enterWaits(t, ctx, fleet.up.http)["landed"]
				turn := fleet.checkText(ctx, log, "t-1", tc, fleet.work("work"))
				after := enterWaits(t, ctx, fleet.up.http)["landed"]
				t.Logf("Enter waited %.0f ms for the sign; queued→replied %v", (after[1]-before[1])*1000, turn.RepliedAt.Sub(turn.QueuedAt).Round(time.Millisecond))
				if turn.Method != herdrbridge.MethodLanded || turn.Enter != 0 {
					t.Errorf("typed with %s and %d extra Enter, want %s and the first Enter taken", turn.Method, turn.Enter, herdrbridge.MethodLanded)
				}
				whole = append(whole, turn.RepliedAt.Sub(turn.QueuedAt))
			})
		}
	}
	fleet.t = t
	waits := enterWaits(t, ctx, fleet.up.http)
	t.Logf("%d turns in %v; queued→replied %v; Enter waited (count, seconds): %v",
		len(whole), time.Since(started).Round(time.Millisecond), summary(whole), waits)
	// Every Enter followed the sign: none needed the fixed pause (a screen
	// the sign could not be read from) or the bound.
	if waits["landed"][0] == 0 {
		t.Errorf("no Enter waited for the sign (fleetd_enter_wait_seconds): %v", waits)
	}
	for by, w := range waits {
		if by != "landed" && w[0] > 0 {
			t.Errorf("%v Enter(s) waited for %q, want every one after the sign (landed)", w[0], by)
		}
	}
}

// busy runs a busy loop on one core for the rest of the test, as a build
// or a test run beside the agents would.
func busy(t *testing.T) {
	t.Helper()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("yes")
	cmd.Stdout = devnull
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		devnull.Close()
	})
}

// enterWaits reads fleetd_enter_wait_seconds from the shim's /metrics: by
// what each wait for Enter ended, its count and sum.
func enterWaits(t *testing.T, ctx context.Context, base string) map[string][2]float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	re := regexp.MustCompile(`(?m)^fleetd_enter_wait_seconds_(count|sum)\{by="(\w+)"\} (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		w := out[m[2]]
		if m[1] == "count" {
			w[0] = v
		} else {
			w[1] = v
		}
		out[m[2]] = w
	}
	return out
}

// summary is the median and the largest of ds.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("median %v, max %v", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
