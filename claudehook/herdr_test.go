package claudehook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
)

// The hook's pane.report_agent goes to a protocol-faithful herdr (which
// validates the request against herdr's schema) and drives the pane's
// agent status there, overriding the screen.
// inHerdrPane is a fleet and a claude pane of a herdr (schema-checked),
// and the pane's environment for a hook.
func inHerdrPane(t *testing.T) (f fleet, status func() string, env func(string) string) {
	t.Helper()
	f = startFleet(t)
	h := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	pane, err := h.SpawnPane(context.Background(), herdrtest.PaneSpec{Argv: []string{"sleep", "60"}, Env: map[string]string{"HERDR_AGENT": "claude"}})
	if err != nil {
		t.Fatal(err)
	}
	status = func() string { return paneStatus(t, h.Path(), pane.ID) }
	return f, status, paneEnv(f.url, t.TempDir(), "HERDR_SOCKET_PATH", h.Path(), "HERDR_PANE_ID", pane.ID)
}

func TestRunReportsThePaneStateToHerdr(t *testing.T) {
	f, status, env := inHerdrPane(t)
	ctx := context.Background()
	for _, step := range []struct {
		hook Hook
		want string
	}{
		{UserPromptSubmit, "working"},
		{Notification, "blocked"},
		{Stop, "done"},
	} {
		var stderr bytes.Buffer
		if err := Run(ctx, string(step.hook), strings.NewReader(payloads[step.hook]), env, Options{Stderr: &stderr}); err != nil {
			t.Fatal(err)
		}
		if stderr.Len() > 0 {
			t.Errorf("%s: stderr %q", step.hook, stderr.String())
		}
		// Run waits for herdr's answer, so the state is already there.
		if got := status(); got != step.want && !(step.want == "done" && got == "idle") {
			t.Errorf("after %s herdr says %s, want %s", step.hook, got, step.want)
		}
	}
	if got := len(f.agentEvents(t)); got != 5 {
		t.Errorf("appended %d events, want 5", got)
	}
}

// A herdr that is gone never fails the hook: the events still land.
func TestRunIgnoresAMissingHerdr(t *testing.T) {
	f := startFleet(t)
	env := paneEnv(f.url, t.TempDir(), "HERDR_SOCKET_PATH", "/nonexistent/herdr.sock", "HERDR_PANE_ID", "w1:p1")
	var stderr bytes.Buffer
	start := time.Now()
	if err := Run(context.Background(), "stop", strings.NewReader(payloads[Stop]), env, Options{Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "herdr report (ignored)") {
		t.Errorf("stderr = %q, want a note about herdr", stderr.String())
	}
	if time.Since(start) > time.Second {
		t.Errorf("a missing herdr slowed the hook to %v", time.Since(start))
	}
	if got := len(f.agentEvents(t)); got != 2 {
		t.Errorf("appended %d events, want 2", got)
	}
}

// paneStatus asks herdr for a pane's agent status with a raw pane.get (the
// test speaks the protocol itself, as the hook does).
func paneStatus(t *testing.T, socket, pane string) string {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(`{"id":"t","method":"pane.get","params":{"pane_id":"` + pane + `"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct {
			Pane struct {
				AgentStatus string `json:"agent_status"`
			} `json:"pane"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &r); err != nil || r.Result.Pane.AgentStatus == "" {
		t.Fatalf("pane.get answer %s: %v", line, err)
	}
	return r.Result.Pane.AgentStatus
}

// The hook speaks herdr's protocol itself (no package net in the hook):
// its pane.report_agent line is herdrapi's, field for field, and it reads
// herdr's answers as herdrapi does — ok, an error, a wrong id.
func TestHerdrReportIsHerdrapis(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "h.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lines := make(chan map[string]any, 1)
	answer := `{"id":%q,"result":{"type":"ok"}}`
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadBytes('\n')
			var req map[string]any
			json.Unmarshal(line, &req)
			lines <- req
			fmt.Fprintf(c, answer+"\n", req["id"])
			c.Close()
		}
	}()
	at := time.Unix(1700000000, 42)
	seq := uint64(at.UnixNano())
	ctx := context.Background()
	if err := reportHerdr(ctx, sock, "w1:p2", "gemini", "working", time.Second, seq); err != nil {
		t.Fatal(err)
	}
	hook := <-lines
	if err := herdrapi.New(sock).ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: "w1:p2", Source: "fleetd:gemini", Agent: "gemini", State: "working", Seq: uint64(at.UnixNano())}); err != nil {
		t.Fatal(err)
	}
	client := <-lines
	delete(hook, "id")
	delete(client, "id")
	if !reflect.DeepEqual(hook, client) {
		t.Errorf("the hook's request %v, herdrapi's %v", hook, client)
	}
	for _, c := range []struct{ answer, want string }{
		{`{"id":%q,"error":{"code":"pane_not_found","message":"no pane w1:p2"}}`, "pane_not_found"},
		{`{"id":"someone-else","result":{"type":"ok"}}%.0q`, "bad response"},
		{`{"id":%q,"result":{"type":"pane_info"}}`, "bad response"},
		{`not json%.0q`, "bad response"},
	} {
		answer = c.answer
		err := reportHerdr(ctx, sock, "w1:p2", "claude", "idle", time.Second, seq)
		<-lines
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("answer %s: %v, want an error saying %q", c.answer, err, c.want)
		}
	}
}

// A Stop hook run with --after-prompt reports to herdr after the prompt's
// hook, and with a seq above the prompt's, though it started first: herdr
// ends at the Stop's state, never at the prompt's "working".
func TestAPromptHookRunAsyncNeverOutranksTheStopAtHerdr(t *testing.T) {
	_, status, env := inHerdrPane(t)
	ctx := context.Background()
	var stderr lockedBuffer
	stop := make(chan error, 1)
	go func() {
		stop <- Run(ctx, "stop", strings.NewReader(payloads[Stop]), env, Options{AfterPrompt: true, PromptWait: time.Minute, Stderr: &stderr})
	}()
	time.Sleep(100 * time.Millisecond) // the Stop hook is at its wait
	if err := Run(ctx, "user-prompt-submit", strings.NewReader(payloads[UserPromptSubmit]), env, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := <-stop; err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "done" && got != "idle" {
		t.Errorf("herdr says %s after the prompt's hook and the Stop's, want done (the Stop's idle); stderr %q", got, stderr.String())
	}
}

// A prompt hook that comes after its turn's Stop gave up waiting for it
// reports nothing to herdr: its working, taken later than the Stop's
// idle, would outrank it, and herdr would show the pane at work for good.
func TestAPromptHookAfterItsTurnEndedReportsNoWorkingToHerdr(t *testing.T) {
	_, status, env := inHerdrPane(t)
	ctx := context.Background()
	var stderr lockedBuffer
	if err := Run(ctx, "stop", strings.NewReader(payloads[Stop]), env, Options{AfterPrompt: true, PromptWait: 50 * time.Millisecond, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	if err := Run(ctx, "user-prompt-submit", strings.NewReader(payloads[UserPromptSubmit]), env, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "done" && got != "idle" {
		t.Errorf("herdr says %s after a late prompt's hook, want done (the Stop's idle); stderr %q", got, stderr.String())
	}
}
