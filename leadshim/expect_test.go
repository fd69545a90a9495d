package leadshim_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// A send to an agent by name is announced to Expect before its queued
// event is appended, so the host's bridge can look at the agent's screen
// while the log stores it; a send to a role, or one refused at the door,
// is not.
func TestASendByNameIsExpectedBeforeItIsQueued(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	var (
		mu    sync.Mutex
		heard []string
		// stored: what the log held of the agent's queued events when
		// Expect heard of each send.
		stored []uint64
	)
	_, base := newShim(t, f, func(c *leadshim.Config) {
		c.Expect = func(agent string) {
			seq, err := f.Log.LastSeq(fleettest.Ctx(t), "fleet.agent."+agent+".queued")
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			heard, stored = append(heard, agent), append(stored, seq)
		}
	})
	postAsync(t, base, `{"to":"w1","text":"hello","wait":false}`)
	postAsync(t, base, `{"to":"role:w","text":"anyone","wait":false}`)
	if status, body := post(t, base, `{"to":"nobody","text":"hello"}`); status != http.StatusNotFound {
		t.Fatalf("a send to an unknown agent: %d %s", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"w1"}; !slices.Equal(heard, want) {
		t.Errorf("Expect heard %q, want %q", heard, want)
	}
	if want := []uint64{0}; !slices.Equal(stored, want) {
		t.Errorf("the log held queued events at %v when Expect heard, want none yet", stored)
	}
}
