package recording_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/herdrbridge/recording"
)

// The proxy is transparent to a herdr client and keeps what crossed it:
// requests, answers, notes; Build turns that into steps, one screen per
// distinct text, ids scrubbed.
func TestProxyRecordsWhatCrossesHerdrsSocket(t *testing.T) {
	srv := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	p, err := recording.Interpose(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	c := herdrapi.New(srv.Path()) // the path the server had: now the proxy's
	ws, err := c.CreateWorkspace(ctx, herdrapi.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pane := ws.RootPane.PaneID
	// The pane's shell draws its prompt a moment after the pane is
	// made: wait for two reads alike, so the two below read one screen,
	// and leave those reads out (Take).
	read := func() string {
		r, err := c.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			t.Fatal(err)
		}
		return r.Text
	}
	for last, i := read(), 0; ; i++ {
		time.Sleep(20 * time.Millisecond)
		now := read()
		if now == last {
			break
		}
		if i == 250 {
			t.Fatalf("the pane's screen kept changing for 5 s: %q", now)
		}
		last = now
	}
	p.Take()
	for range 2 {
		if _, err := c.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible}); err != nil {
			t.Fatal(err)
		}
	}
	p.Note(pane, "a note")
	if err := c.SendKeys(ctx, pane, "escape"); err != nil {
		t.Fatal(err)
	}
	rec := recording.Build("claude", "proxy", recording.Versions{}, p.Take(), nil, &recording.Scrubber{})
	var ops []string
	for _, st := range rec.Steps {
		ops = append(ops, st.Op)
		if st.Pane != "" && st.Pane != "pane-1" {
			t.Errorf("step %+v: pane not scrubbed to pane-1", st)
		}
	}
	if want := []string{"read", "read", "note", "keys"}; !slices.Equal(ops, want) {
		t.Errorf("steps %v, want %v", ops, want)
	}
	if len(rec.Screens) != 1 {
		t.Errorf("%d screens kept for two reads of the same screen, want 1", len(rec.Screens))
	}
	// Nothing new after a Take: a connection still closing behind the
	// answer its client already has may come again as Context (the
	// request its later lines would answer), which is no new line.
	for _, w := range p.Take() {
		if !w.Context {
			t.Errorf("Take after Take returned %+v", w)
		}
	}
}

// What varies from run to run becomes a stable name.
func TestScrubberNamesWhatVaries(t *testing.T) {
	s := &recording.Scrubber{Literals: map[string]string{"/tmp/TestX123/001/work-1": "$WORK"}}
	in := "cd /tmp/TestX123/001/work-1/sub, session 4f52a8e0-1b2c-4d5e-8f90-123456789abc then 4F52A8E0-1B2C-4D5E-8F90-123456789ABC, turn 01JF6Z3A4B5C6D7E8F9G0H1J2K at 2026-12-04T13:01:02.123Z in w1:p2, file /tmp/other/x.txt, kept $WORK/.gemini/tmp/x, ses_dbea5c21dffebBZVmeotlyziWk, msg_241ca479e001faG3ioelSmbnIj"
	want := "cd $WORK/sub, session <uuid-1> then <uuid-1>, turn <ulid-1> at <time> in pane-1, file $TMP, kept $WORK/.gemini/tmp/x, <session-1>, <message-1>"
	if got := s.String(in); got != want {
		t.Errorf("scrubbed\n%s\nwant\n%s", got, want)
	}
}

// A diff shows only what changed, with context, - before and + after.
func TestDiffShowsTheChangedLines(t *testing.T) {
	a := strings.Split("a b c d e f g h", " ")
	b := strings.Split("a b c D e f g h", " ")
	got := recording.Diff(a, b, 1)
	want := "  c\n- d\n+ D\n  e\n"
	if got != want {
		t.Errorf("diff\n%s\nwant\n%s", got, want)
	}
	if d := recording.Diff(a, a, 3); d != "" {
		t.Errorf("diff of equal lines: %q", d)
	}
}

// A recording saved is the recording loaded, at its path by kind,
// version and scenario.
func TestSaveLoadRoundTrips(t *testing.T) {
	dir := t.TempDir()
	r := &recording.Recording{Kind: "claude", Scenario: "x", Versions: recording.Versions{CLI: "2.1.328", Runtime: "herdrtest"},
		Screens: []string{"❯ \n"}, Steps: []recording.Step{{At: 1, Op: recording.OpRead}}, Decisions: []string{"read 1 …"}}
	path := recording.Path(dir, r.Kind, r.Versions.CLI, r.Scenario)
	if want := filepath.Join(dir, "claude", "2.1.328", "x.json.gz"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	if err := recording.Save(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Screens[0] != r.Screens[0] || got.Decisions[0] != r.Decisions[0] || got.Steps[0].Op != recording.OpRead {
		t.Errorf("loaded %+v, want %+v", got, r)
	}
}
