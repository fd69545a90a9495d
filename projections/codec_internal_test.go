package projections

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// The rows and checkpoints are encoded by the v2 encoder with v1's
// semantics; their readers expect what encoding/json wrote. Over the
// state a generated workload folds to, with text JSON must escape (and,
// as encoding/json does, HTML-escape), every row and the checkpoint must
// encode byte for byte as json.Marshal would, and decode as
// json.Unmarshal would.
func TestRowsAndCheckpointsEncodeAsEncodingJSONDid(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	log := events.New(srv.JS, events.Options{Source: "fleetd/test/projections"})
	w := projectionstest.Generate(projectionstest.Config{Seed: 7, Events: 3000})
	if _, err := projectionstest.Play(ctx, log, srv.JS, w.Ops); err != nil {
		t.Fatal(err)
	}
	odd := `<script>alert("x & y")</script> tab	nul` + "\x00 ünï 日本 \u2028 \xff"
	for _, ev := range []events.Event{
		{Subject: "w-odd", Data: events.AgentRegistered{Agent: "w-odd", Host: "h1", Pane: "p<1>", Role: "w-local", Cwd: odd, Model: odd}},
		{Subject: "w-odd", CorrelationID: "01JD0000000000000000000009", ID: "01JD0000000000000000000009", Data: events.AgentQueued{From: "lead", Text: odd}},
	} {
		if _, err := log.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	m := New(log, srv.JS, Options{BucketPrefix: "codec_", Now: func() time.Time { return w.End }}).(*materializer)
	t.Cleanup(func() { m.Close() })
	if err := m.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}

	same := func(what string, v any) {
		t.Helper()
		got, err := encode(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s encodes\n %s\nnot as encoding/json\n %s", what, got, want)
		}
	}
	for id, a := range m.st.agents {
		same("agent "+id, a.Agent)
	}
	for name, s := range m.st.sessions {
		same("session "+name, s.Session)
	}
	turns := 0
	m.st.book.Turns(func(tn lifecycle.Turn) bool {
		turns++
		same("turn "+tn.ID, tn)
		return true
	})
	snap := m.snapshot()
	same("checkpoint", snap)
	if len(m.st.agents) < 2 || turns == 0 || len(m.st.sessions) == 0 {
		t.Fatalf("the workload folded to %d agents, %d open turns, %d sessions: too little to show anything", len(m.st.agents), turns, len(m.st.sessions))
	}
	data, err := encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`\u003cscript\u003e`)) {
		t.Fatal("the odd text is not in the checkpoint")
	}
	var got, want snapshot
	if err := decode(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the checkpoint decodes otherwise than encoding/json decodes it")
	}
}
