package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/roles"
)

// A flood of GET /inbox/<name> with the read-only sign-in cookie — what a
// same-site page can send — opens no inbox: each is 404 no_inbox and no
// consumer is made, so /events, jobs and time travel still answer. (Each
// GET used to make a durable consumer: about 1,000 filled nats-server's
// default limit on FLEET, and every reader answered 503 from then on,
// across restarts.) The bearer token still opens a lead's inbox.
func TestAFloodOfInboxReadsOpensNoConsumer(t *testing.T) {
	const token = "a-long-enough-token-for-the-flood-test"
	rc := roles.Config{Roles: map[string]roles.Role{"lead": {EnvClass: roles.EnvClean, Inbox: true}}}
	gw := startGateway(t, filepath.Join(t.TempDir(), "data"), gateway.Config{Host: "flood", NoHerdr: true, Roles: &rc, Token: token})
	base := "http://" + gw.HTTPAddr()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	res, err := hc.PostForm(base+"/login", url.Values{"token": {token}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Value != "" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("sign-in answered %d without a cookie", res.StatusCode)
	}
	get := func(path string, auth func(*http.Request)) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(fleettest.Ctx(t), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		auth(req)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			return res.StatusCode, "" // a stream: its answer is enough
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	withCookie := func(r *http.Request) { r.AddCookie(cookie) }
	withBearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }

	const flood = 1200
	for i := range flood {
		status, body := get(fmt.Sprintf("/inbox/x-%d", i), withCookie)
		if status != http.StatusNotFound || !strings.Contains(body, "no_inbox") {
			t.Fatalf("GET /inbox/x-%d with the cookie = %d %s, want 404 no_inbox", i, status, body)
		}
	}
	stream, err := gw.JetStream().Stream(fleettest.Ctx(t), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	lister := stream.ConsumerNames(fleettest.Ctx(t))
	for name := range lister.Name() {
		if strings.HasPrefix(name, "inbox-x-") {
			t.Errorf("consumer %s was made for a name no one opened", name)
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	if limit := stream.CachedInfo().Config.MaxConsumers; limit != events.DefaultMaxConsumers {
		t.Errorf("FLEET's consumer limit is %d, want %d", limit, events.DefaultMaxConsumers)
	}

	// What used to answer 503 once the consumers ran out.
	if status, body := get("/events", withCookie); status != http.StatusOK {
		t.Errorf("GET /events after the flood = %d %s", status, body)
	}
	if status, body := get("/ui/api/roster?at=%231", withCookie); status != http.StatusOK {
		t.Errorf("time travel after the flood = %d %s", status, body)
	}
	req, err := http.NewRequestWithContext(fleettest.Ctx(t), http.MethodPost, base+"/jobs",
		strings.NewReader(`{"plan":{"goal":"g","tasks":[{"id":"a","to":"ghost","instructions":"x"}]},"from":"lead","from_role":"lead"}`))
	if err != nil {
		t.Fatal(err)
	}
	withBearer(req)
	req.Header.Set("Content-Type", "application/json")
	res, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /jobs after the flood = %d %s", res.StatusCode, b)
	}
	var job struct{ Job string }
	if err := json.Unmarshal(b, &job); err != nil || job.Job == "" {
		t.Fatalf("POST /jobs answer %s: %v", b, err)
	}
	if status, body := get("/jobs/"+job.Job+"?wait=10s", withCookie); status != http.StatusOK || strings.Contains(body, "consumer") {
		t.Errorf("GET /jobs/%s after the flood = %d %s", job.Job, status, body)
	}

	// A lead outside the fleet opens its own inbox with the token.
	if status, body := get("/inbox/lead-out?wait=0", withBearer); status != http.StatusOK {
		t.Errorf("GET /inbox/lead-out with the bearer token = %d %s, want 200 (opened)", status, body)
	}
	if _, err := stream.Consumer(fleettest.Ctx(t), "inbox-lead-out"); err != nil {
		t.Errorf("the lead's inbox: %v", err)
	}
}
