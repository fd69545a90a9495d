package herdrtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
)

func TestFailNextRefusesNTimesThenServes(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	s.FailNext("pane.send_text", "pane_send_failed", "write to pane failed", 2)
	req := fmt.Sprintf(`{"id":"t1","method":"pane.send_text","params":{"pane_id":%q,"text":"x"}}`+"\n", p.ID)
	for i := range 2 {
		if got, want := roundTrip(t, s.Path(), req), `{"id":"t1","error":{"code":"pane_send_failed","message":"write to pane failed"}}`+"\n"; got != want {
			t.Errorf("request %d answered %q, want %q", i+1, got, want)
		}
	}
	if in := s.Input(p.ID); len(in) != 0 {
		t.Errorf("refused requests wrote %q", in)
	}
	if got := roundTrip(t, s.Path(), req); got != `{"id":"t1","result":{"type":"ok"}}`+"\n" {
		t.Errorf("third request answered %q, want ok", got)
	}
	if in := s.Input(p.ID); len(in) != 1 || string(in[0].Data) != "x" {
		t.Errorf("Input = %q, want the third request's x", in)
	}
	t.Run("n ≤ 0 cancels", func(t *testing.T) {
		s.FailNext("ping", "server_unavailable", "down", 5)
		s.FailNext("ping", "", "", 0)
		if m := ask(t, s.Path(), "ping", `{}`); m["error"] != nil {
			t.Errorf("ping after cancelling = %v", m)
		}
	})
}

func TestCallsCountsRequestsPerMethod(t *testing.T) {
	// The unparseable request is meant: the schema violation is expected.
	s := Start(t, Config{Validator: herdrschema.Schema(t), OnInvalid: func(error) {}})
	s.FailNext("agent.list", "internal_error", "boom", 1)
	for range 3 {
		ask(t, s.Path(), "ping", `{}`)
	}
	ask(t, s.Path(), "agent.list", `{}`)
	ask(t, s.Path(), "agent.list", `{}`)
	ask(t, s.Path(), "pane.get", `{"pane_id":"w9:p9"}`)
	roundTrip(t, s.Path(), "{nope\n") // no method: not counted
	want := map[string]int{"ping": 3, "agent.list": 2, "pane.get": 1}
	if got := s.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Calls = %v, want %v", got, want)
	}
}
