package leadshim_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/projections"
)

// GET /roster is encoded once per projection position: the same body and
// ETag until something is applied, 304 to a poller that has it, and the
// change at once after one.
func TestRosterIsServedFromOneEncodingPerChange(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)
	get := func(etag string) (int, string, []projections.Agent) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/roster", nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var agents []projections.Agent
		if resp.StatusCode == http.StatusOK {
			agents = mustJSON[[]projections.Agent](t, b)
		}
		return resp.StatusCode, resp.Header.Get("ETag"), agents
	}

	code, tag1, agents := get("")
	if code != http.StatusOK || tag1 == "" || len(agents) != 1 || agents[0].Agent != "w1" {
		t.Fatalf("first GET: %d etag %q agents %+v", code, tag1, agents)
	}
	if code, tag, _ := get(""); code != http.StatusOK || tag != tag1 {
		t.Errorf("second GET with nothing applied: %d etag %q, want 200 %q", code, tag, tag1)
	}
	if code, _, _ := get(tag1); code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", code)
	}

	f.Register("w2", "w")
	code, tag2, agents := get(tag1)
	if code != http.StatusOK || tag2 == tag1 || len(agents) != 2 {
		t.Errorf("after a registration: %d etag %q (was %q), %d agents; want 200, a new ETag, 2", code, tag2, tag1, len(agents))
	}
}
