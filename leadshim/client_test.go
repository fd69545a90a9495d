package leadshim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// The Go client speaks the shim's API: a blocking send gets the reply
// envelope, an async one its id to re-attach with, the read models come
// back typed, and a refusal is a *ClientError with the shim's code.
func TestTheClientSpeaksTheShimsAPI(t *testing.T) {
	f := fleettest.NewKind(t, fleettest.Projected)
	f.Register("w-claude-1", "w-claude")
	f.RunAgents(30 * time.Millisecond)
	_, base := newShim(t, f, nil)
	c := leadshim.NewClient(base+"/", "")
	ctx := context.Background()

	env, err := c.Send(ctx, leadshim.Message{To: "w-claude-1", Text: "add the tests", Timeout: "20s"})
	if err != nil || env.Status != "replied" || env.Reply != fleettest.Reply("add the tests") {
		t.Fatalf("Send = %+v, %v", env, err)
	}
	acc, err := c.SendAsync(ctx, leadshim.Message{To: "w-claude-1", Text: "later"})
	if err != nil || acc.ID == "" {
		t.Fatalf("SendAsync = %+v, %v", acc, err)
	}
	if got, err := c.Turn(ctx, acc.ID, "20s"); err != nil || got.Status != "replied" {
		t.Errorf("Turn = %+v, %v", got, err)
	}
	if agents, err := c.Roster(ctx); err != nil || len(agents) != 1 || agents[0].Agent != "w-claude-1" {
		t.Errorf("Roster = %+v, %v", agents, err)
	}
	if _, err := c.Sessions(ctx); err != nil {
		t.Errorf("Sessions: %v", err)
	}
	_, err = c.Send(ctx, leadshim.Message{To: "nobody", Text: "hello"})
	var ce *leadshim.ClientError
	if !errors.As(err, &ce) || ce.Status != http.StatusNotFound || ce.Body.Code != "unknown_agent" {
		t.Errorf("send to an unknown agent: %v, want a 404 unknown_agent ClientError", err)
	}
	if _, err := leadshim.NewClient("http://127.0.0.1:1", "").Roster(ctx); !errors.Is(err, leadshim.ErrUnreachable) {
		t.Errorf("no shim: %v, want ErrUnreachable", err)
	}
}

// TimedOut finds the turn id in a 504 and in nothing else.
func TestTimedOutIsA504WithItsTurnID(t *testing.T) {
	for _, tc := range []struct {
		err    error
		wantID string
	}{
		{&leadshim.ClientError{Status: http.StatusGatewayTimeout, Body: leadshim.ErrorBody{ID: "T1"}}, "T1"},
		{fmt.Errorf("wrapped: %w", &leadshim.ClientError{Status: http.StatusGatewayTimeout, Body: leadshim.ErrorBody{ID: "T2"}}), "T2"},
		{&leadshim.ClientError{Status: http.StatusGatewayTimeout}, ""},
		{&leadshim.ClientError{Status: http.StatusConflict, Body: leadshim.ErrorBody{ID: "T3"}}, ""},
		{leadshim.ErrUnreachable, ""},
	} {
		id, ok := leadshim.TimedOut(tc.err)
		if id != tc.wantID || ok != (tc.wantID != "") {
			t.Errorf("TimedOut(%v) = %q, %t, want %q", tc.err, id, ok, tc.wantID)
		}
	}
}
