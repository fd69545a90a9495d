package agentapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// A read of an agentapi pane first brings its screen to now.
var _ herdrtest.Syncer = (*agentapi.Terminal)(nil)

// agentapiHerdr is a herdr-protocol server, checked against herdr's
// schema, whose panes run under real agentapi servers: the agentapi
// runtime as `fleetd agentapi-host` serves it.
func agentapiHerdr(t *testing.T) (*herdrtest.Server, *herdrapi.Client) {
	t.Helper()
	requireAgentapi(t)
	srv := herdrtest.Start(t, herdrtest.Config{
		Validator: herdrschema.Schema(t), Cols: 100, Rows: 30,
		Start: func(spec herdrtest.StartSpec) (herdrtest.Terminal, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return agentapi.StartTerminal(ctx, agentapi.TerminalConfig{Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows})
		},
	})
	return srv, herdrapi.New(srv.Path())
}

// waitScreen waits until the pane's visible screen satisfies ok.
func waitScreen(t *testing.T, c *herdrapi.Client, pane string, within time.Duration, ok func(string) bool) string {
	t.Helper()
	var last string
	if err := checkfor.Poll(within, 50*time.Millisecond, func() error {
		r, err := c.Read(t.Context(), herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		last = r.Text
		if !ok(last) {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("pane %s: %v; screen:\n%s", pane, err, last)
	}
	return last
}

// A pane of the agentapi runtime is a herdr pane: its shell takes a typed
// line unframed, a program that took the terminal gets a paste framed as
// bracketed (what the agent CLIs turn on; agentapi does not report
// modes), the foreground is read from /proc, and the pane's end is
// herdr's pane_exited.
func TestAgentapiPanesSpeakHerdrsProtocol(t *testing.T) {
	srv, c := agentapiHerdr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	ws, err := c.CreateWorkspace(ctx, herdrapi.CreateRequest{CWD: dir, Env: map[string]string{"FLEET_PROBE": "probe-42"}})
	if err != nil {
		t.Fatal(err)
	}
	pane := ws.RootPane.PaneID
	stream, err := c.Subscribe(ctx, herdrapi.Lifecycle(herdrapi.EventPaneExited, herdrapi.EventPaneClosed))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	// The shell: a typed line, unframed; the pane's environment and cwd.
	marker := filepath.Join(dir, "ran")
	if err := c.SendInput(ctx, pane, `echo "env=$FLEET_PROBE pane=$HERDR_PANE_ID" > `+marker+`; cat `+marker, "enter"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, c, pane, 10*time.Second, func(s string) bool { return strings.Contains(s, "env=probe-42 pane="+pane) })

	// A program in the foreground: the paste comes framed.
	if err := c.SendInput(ctx, pane, "cat -v", "enter"); err != nil {
		t.Fatal(err)
	}
	// cat has the terminal once the screen shows the framing of a paste.
	if err := checkfor.Poll(10*time.Second, 200*time.Millisecond, func() error {
		if err := c.SendInput(ctx, pane, "pasted", "enter"); err != nil {
			return err
		}
		r, err := c.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		if !strings.Contains(r.Text, "^[[200~pasted^[[201~") {
			return fmt.Errorf("no framed paste yet:\n%s", r.Text)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v; input written: %q", err, srv.Input(pane))
	}
	// Ctrl-D ends cat, exit ends the shell: agentapi exits, the pane too.
	if err := c.SendKeys(ctx, pane, "ctrl+d"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, c, pane, 10*time.Second, func(s string) bool {
		s = strings.TrimSpace(s)
		return strings.HasSuffix(s, "$") || strings.HasSuffix(s, "#")
	})
	if err := c.SendInput(ctx, pane, "exit", "enter"); err != nil {
		t.Fatal(err)
	}
	if ev := herdrapitest.NextEvent(t, stream, pane, herdrapi.EventPaneExited, herdrapi.EventPaneClosed); ev.Kind != herdrapi.EventPaneExited {
		t.Fatalf("event %+v, want pane_exited", ev)
	}
	var ins []string
	for _, w := range srv.Input(pane) {
		ins = append(ins, fmt.Sprintf("%q", w.Data))
	}
	if len(ins) == 0 || strings.Contains(ins[0], "200~") {
		t.Errorf("the shell's line went framed or not at all: %v", ins)
	}
}

// A read of an agentapi pane shows what its program drew before
// anything it did after: agentapi samples the screen every 25 ms, so
// without Sync a read made as soon as the program's side effect is seen
// (as the engine reads right after an agent's hook reported) showed the
// screen from before. Here the side effect is a file the shell touches
// right after printing.
func TestAReadShowsWhatTheProgramDrewBeforeItActed(t *testing.T) {
	_, c := agentapiHerdr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	ws, err := c.CreateWorkspace(ctx, herdrapi.CreateRequest{CWD: dir})
	if err != nil {
		t.Fatal(err)
	}
	pane := ws.RootPane.PaneID
	for i := range 5 {
		mark := filepath.Join(dir, fmt.Sprintf("mark-%d", i))
		// The quotes keep the echo of the line from holding the words.
		if err := c.SendInput(ctx, pane, fmt.Sprintf(`printf 'DRA''WN-%%d\n' %d; touch %s`, i, mark), "enter"); err != nil {
			t.Fatal(err)
		}
		if err := checkfor.Poll(10*time.Second, time.Millisecond, func() error {
			_, err := os.Stat(mark)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		r, err := c.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("DRAWN-%d", i); !strings.Contains(r.Text, want) {
			t.Fatalf("read once %s existed, the screen lacks %q:\n%s", mark, want, r.Text)
		}
	}
}
