package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/leadshim"
)

// The lead process makes its calls at once, so a turn held up does not
// hold the next, and each answer reaches the call that asked for it, with
// the lead's clock around the call; a refused call comes back as its
// error. The stage's side is wired to ServeLead over pipes, as it is to
// the child's stdin and stdout.
func TestLeadProcessAnswersOverlappingCallsEachToItsCaller(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m leadshim.Message
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.URL.Path != "/message" {
			http.Error(w, "bad call", http.StatusBadRequest)
			return
		}
		switch m.To {
		case "slow":
			<-release // answered only once "fast" has been
		case "nobody":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":"unknown_agent","message":"no agent nobody"}}`)
			return
		}
		_ = json.NewEncoder(w).Encode(leadshim.Envelope{Agent: m.To, Status: "replied", Reply: "re: " + m.Text})
	}))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	callsR, callsW := io.Pipe()
	answersR, answersW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := ServeLead(ctx, srv.URL, "", callsR, answersW)
		answersW.Close()
		served <- err
	}()
	l := &leadProc{in: callsW, waiting: map[int]chan leadAnswer{}, gone: make(chan struct{})}
	go l.read(answersR)

	type result struct {
		env        leadshim.Envelope
		start, end time.Time
		err        error
	}
	send := func(to string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			env, start, end, err := l.send(ctx, leadshim.Message{To: to, Text: "hi " + to})
			ch <- result{env, start, end, err}
		}()
		return ch
	}
	slow := send("slow")
	fast := <-send("fast")
	if fast.err != nil || fast.env.Agent != "fast" || fast.env.Reply != "re: hi fast" {
		t.Fatalf("fast call: %+v, %v; want its own reply while the slow one waits", fast.env, fast.err)
	}
	if fast.start.IsZero() || fast.end.Before(fast.start) {
		t.Errorf("fast call timed %v → %v, want a start and an end after it", fast.start, fast.end)
	}
	release <- struct{}{}
	if s := <-slow; s.err != nil || s.env.Agent != "slow" {
		t.Errorf("slow call: %+v, %v; want its own reply", s.env, s.err)
	}
	if nb := <-send("nobody"); nb.err == nil || !strings.Contains(nb.err.Error(), "unknown_agent") {
		t.Errorf("call to an unknown agent: %v, want the shim's 404 as the error", nb.err)
	}

	// Its input ending ends the lead, and the stage's side hears so.
	callsW.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeLead: %v, want nil once its input ended", err)
	}
	select {
	case <-l.gone:
	case <-ctx.Done():
		t.Fatal("the stage's side did not see the lead's output end")
	}
	if _, _, _, err := l.send(ctx, leadshim.Message{To: "late"}); err == nil {
		t.Error("a call after the lead ended: nil error, want one")
	}
}

// A herdr that ends before it serves is an error that says how it ended.
func TestAHerdrProcessThatEndsBeforeServingSaysHow(t *testing.T) {
	_, err := startHerdrProc(context.Background(), "/bin/false", "", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ended before it served (exit status 1)") {
		t.Errorf("herdr from /bin/false: %v, want it ended before it served, with its exit status", err)
	}
}
