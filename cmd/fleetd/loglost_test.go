package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// httpJSON does a request against a shim and decodes the answer into v.
func httpJSON(t *testing.T, method, url, body string, v any) int {
	t.Helper()
	status, b := fleettest.Do(t, method, url, body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, status, b, err)
		}
	}
	return status
}

// waitHealth polls /healthz until it answers status with code (and a
// reason containing each of says), and returns the body.
func waitHealth(t *testing.T, base string, status int, code string, total time.Duration, says ...string) leadshim.Health {
	t.Helper()
	var h leadshim.Health
	checkfor.Eventually(t, total, 100*time.Millisecond, func() error {
		h = leadshim.Health{}
		got := httpJSON(t, http.MethodGet, base+"/healthz", "", &h)
		ok := got == status && h.Code == code
		for _, s := range says {
			ok = ok && strings.Contains(h.Error, s)
		}
		if !ok {
			return fmt.Errorf("/healthz: %d %+v, want %d %q", got, h, status, code)
		}
		return nil
	})
	return h
}

// G8: `nats stream rm FLEET -f` under a running `fleetd up` (no herdr).
// fleetd notices: /healthz is 503 stream_lost with the reason, sends are
// refused with it; it recovers without a restart once an administrator
// creates the stream again (sends are taken and land in the new stream);
// with --recreate-stream it creates the stream itself; and SIGTERM while
// the stream is gone exits cleanly within a bound. Before, /healthz and
// POSTs stayed 503 for ever and SIGTERM never exited.
func TestUpSurvivesItsStreamDeletedAndExitsOnSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := startUp(t, t.TempDir(), "--recreate-stream", "0")
	log, js := connectLog(t, up.url)
	// An agent to send to (no herdr: nobody types, turns stay queued).
	if _, err := log.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentRegistered{Agent: "w-1", Host: "elsewhere", Pane: "p1", Role: "w"}}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, up.http, http.StatusOK, "", 20*time.Second)
	var acc leadshim.Accepted
	if got := httpJSON(t, http.MethodPost, up.http+"/message", `{"to":"w-1","text":"before","wait":false}`, &acc); got != http.StatusAccepted {
		t.Fatalf("send before: %d", got)
	}

	// The administrator's `nats stream rm FLEET -f`.
	if err := js.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	// The reason says what is missing and who brings it back.
	waitHealth(t, up.http, http.StatusServiceUnavailable, "stream_lost", 20*time.Second, "FLEET stream is missing", "administrator")
	var e leadshim.Error
	if got := httpJSON(t, http.MethodPost, up.http+"/message", `{"to":"w-1","text":"refused","wait":false}`, &e); got != http.StatusServiceUnavailable ||
		e.Err.Code != "stream_lost" || !strings.Contains(e.Err.Message, "missing") {
		t.Errorf("send while lost: %d %+v", got, e)
	}
	var env leadshim.Envelope
	if got := httpJSON(t, http.MethodGet, up.http+"/message/"+acc.ID, "", &env); got != http.StatusOK || env.Status != "queued" || env.Stalled == "" {
		t.Errorf("GET of the accepted turn while lost: %d %+v", got, env)
	}

	// The administrator creates it again: fleetd resumes by itself.
	if _, err := events.EnsureStream(ctx, js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, up.http, http.StatusOK, "", 30*time.Second)
	acc = leadshim.Accepted{}
	if got := httpJSON(t, http.MethodPost, up.http+"/message", `{"to":"w-1","text":"after","wait":false}`, &acc); got != http.StatusAccepted {
		t.Fatalf("send after recovery: %d", got)
	}
	env = leadshim.Envelope{}
	if got := httpJSON(t, http.MethodGet, up.http+"/message/"+acc.ID, "", &env); got != http.StatusOK || env.Status != "queued" || env.Agent != "w-1" {
		t.Errorf("GET after recovery: %d %+v", got, env)
	}
	found := false
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{"fleet.agent.w-1.queued"}}) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || ev.ID == acc.ID
	}
	if !found {
		t.Error("the send after recovery is not in the new stream")
	}

	// Lost again, and SIGTERM: a clean exit within the bound.
	if err := js.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, up.http, http.StatusServiceUnavailable, "stream_lost", 20*time.Second)
	start := time.Now()
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- up.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("fleetd up exited with %v:\n%s", err, up.Output())
		}
		t.Logf("exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatalf("fleetd up still running 15s after SIGTERM with its stream gone:\n%s", up.Output())
	}
}

// With --recreate-stream, fleetd creates a lost FLEET again itself and
// is healthy again without anybody's help.
func TestUpRecreatesItsStreamWhenAllowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := startUp(t, t.TempDir(), "--recreate-stream", "1s")
	js := connectJS(t, up.url)
	waitHealth(t, up.http, http.StatusOK, "", 20*time.Second)
	before, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, up.http, http.StatusServiceUnavailable, "stream_lost", 20*time.Second)
	waitHealth(t, up.http, http.StatusOK, "", 30*time.Second)
	after, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if after.CachedInfo().Created.Equal(before.CachedInfo().Created) {
		t.Fatal("the stream was not created again")
	}
	if !strings.Contains(up.Output(), "created the missing stream again") {
		t.Errorf("fleetd did not say it recreated the stream:\n%s", up.Output())
	}
}
