package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/simagent"
)

// budgetRoles writes a roles file with one role of simulated agents
// sharing a budget of tokens an hour.
func budgetRoles(t *testing.T, tokensPerHour int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "roles.json")
	writeJSONFile(t, path, map[string]any{"roles": map[string]any{"w": map[string]any{
		"command": []string{fleetdBin, "sim-agent", "--think", "10ms"},
		"env":     map[string]string{"HERDR_AGENT": "claude"},
		"budget":  map[string]any{"tokens_per_hour": tokensPerHour},
	}}})
	return path
}

// refused posts a turn to h and returns the error answer, or fails the
// test when the turn is not refused.
func refused(t *testing.T, h *fleetHost, to string) (int, leadshim.ErrorBody) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"to": to, "text": "too much", "from": "test", "wait": false})
	req, _ := http.NewRequest(http.MethodPost, h.httpURL+"/message", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e leadshim.Error
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("to %s at %s: %s: %s", to, h.name, resp.Status, b)
	}
	return resp.StatusCode, e.Err
}

// Three hosts, agents of one role on two of them, one budget: the hooks
// record each turn's tokens on the host that ran it, every host folds
// them into the same window, and once the role has used its budget a
// turn is refused on every host — for the role and for either agent —
// with when it frees up. The 80% and 100% warnings are each written
// once, by whichever host saw them first.
func TestClusterHostsShareOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-host fleet")
	}
	// Each turn "job N" costs 10+5 input and 10 output tokens: 25.
	in, out, _ := simagent.TokensFor("job 0", "SIM: job 0")
	perTurn := in + out
	f := startFleet(t, 3, budgetRoles(t, 3*perTurn-15)) // 60: warned after two turns, spent after three
	h1, h2, h3 := f.hosts[0], f.hosts[1], f.hosts[2]
	f.spawn(h1, "w", "w-1")
	f.spawn(h2, "w", "w-2")
	for _, h := range f.hosts {
		waitRoster(t, h, 30*time.Second, "both agents idle", allIdle("w-1", "w-2"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// One turn per host, each served by an agent of another host.
	for i, c := range []struct {
		via *fleetHost
		to  string
	}{{h1, "w-2"}, {h2, "w-1"}, {h3, "role:w"}} {
		env, err := send(ctx, c.via, c.to, fmt.Sprint("job ", i))
		if err != nil {
			t.Fatalf("turn %d (%d of %d tokens used): %v", i+1, int64(i)*perTurn, 3*perTurn-15, err)
		}
		if got := env.Tokens.In + env.Tokens.Out; got != perTurn {
			t.Fatalf("turn %d used %d tokens, want %d", i+1, got, perTurn)
		}
	}

	for _, h := range f.hosts {
		// Every host's views reach the same 75 tokens.
		waitRoster(t, h, 30*time.Second, "the role out of budget", func(r map[string]projections.Agent) bool {
			return r["w-1"].Budget.Exhausted() && r["w-2"].Budget.Exhausted()
		})
		for _, to := range []string{"role:w", "w-1", "w-2"} {
			status, e := refused(t, h, to)
			if status != http.StatusTooManyRequests || e.Code != "budget_exhausted" || e.FreesAt == nil {
				t.Errorf("to %s at %s with the role's budget spent: %d %+v", to, h.name, status, e)
				continue
			}
			if d := time.Until(*e.FreesAt); d < 55*time.Minute || d > time.Hour+5*time.Minute {
				t.Errorf("to %s at %s: frees in %v, want about an hour", to, h.name, d)
			}
		}
	}

	warnings := func() map[int]int {
		n := map[int]int{}
		for _, ev := range readLog(t, h1.natsURL) {
			if d, ok := ev.Data.(events.RoleBudgetWarning); ok && ev.Subject == "w" {
				n[d.Percent]++
			}
		}
		return n
	}
	checkfor.Eventually(t, 20*time.Second, 200*time.Millisecond, func() error {
		if n := warnings(); n[80] == 0 || n[100] == 0 {
			return fmt.Errorf("role warnings so far %v", n)
		}
		return nil
	})
	if n := warnings(); n[80] != 1 || n[100] != 1 {
		t.Errorf("role warnings %v: want one at 80%% and one at 100%%, from three hosts", n)
	}
}
