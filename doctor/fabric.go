package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/natsauth"
)

// Clock skew: at clockFail a host is a third of the default host TTL
// (15 s) off, so the fleet judges its silence (and budget windows) by
// times that disagree by that much; at clockWarn it is already more than
// NTP leaves.
const (
	clockWarn = time.Second
	clockFail = 5 * time.Second
)

// maxHosts bounds how many hosts' heartbeats the clock check reads.
const maxHosts = 64

// checkNATS connects as the fleet's clients do, then reads the FLEET
// stream's info (which carries the server's time) and every live host's
// last heartbeat: three lines, nats, stream and clock.
func checkNATS(ctx context.Context, cfg Config) []Result {
	url := cfg.NATSURL
	if url == "" {
		url = nats.DefaultURL
	}
	as := "no credentials"
	switch {
	case cfg.Creds != "":
		as = "credentials " + cfg.Creds
	case cfg.NATSToken != "":
		as = "a token"
	}
	stream := "stream " + events.Stream
	notChecked := func(why string) []Result {
		return []Result{skip(stream, "not checked: "+why, ""), skip("clock", "not checked: "+why, "")}
	}
	// A request these credentials may not publish is never answered; the
	// server says so asynchronously, which ends the wait at once.
	ctx, denied := context.WithCancelCause(ctx)
	defer denied(nil)
	onErr := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			denied(err)
		}
	})
	t0 := time.Now()
	nc, js, err := natsauth.Connect(url, "fleetd doctor", cfg.Creds, cfg.NATSToken, nats.Timeout(cfg.Timeout), nats.NoReconnect(), onErr)
	if err != nil {
		fix := "start the fabric here ('fleetd up'), or point --nats (FLEET_NATS_URL) at its NATS"
		switch {
		case errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization"):
			fix = "NATS refused " + as + ": pass this host's key from 'fleetd auth' (--creds, FLEET_NATS_CREDS) or the fabric's token (--nats-token, or --token)"
		case !errors.Is(err, natsauth.ErrNoServer):
			fix = "pass the credentials file 'fleetd auth' wrote for this host (--creds, FLEET_NATS_CREDS)"
		case time.Since(t0) >= cfg.Timeout:
			fix = "nothing answered within " + cfg.Timeout.String() + ": check that --nats (FLEET_NATS_URL) names the fabric's NATS and that the network lets you reach it"
		}
		return append([]Result{fail("nats", oneLine(err), fix)}, notChecked("no NATS")...)
	}
	defer nc.Close()
	detail := fmt.Sprintf("%s as %s: nats-server %s (%s)", url, as, nc.ConnectedServerVersion(), nc.ConnectedServerName())
	if c := nc.ConnectedClusterName(); c != "" {
		detail += ", cluster " + c
	}
	if rtt, err := nc.RTT(); err == nil {
		detail += ", round trip " + rtt.Round(time.Microsecond).String()
	}
	out := []Result{ok("nats", detail)}

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	before := time.Now()
	s, err := js.Stream(ctx, events.Stream)
	after := time.Now()
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return append(out, fail(stream, events.Stream+" is not provisioned on "+url,
			"run 'fleetd provision' (with the admin's key, under 'fleetd auth'), or 'fleetd up', which creates it when its key may"),
			skip("clock", "not checked: no "+events.Stream+" stream", ""))
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return append(out, fail(stream, "JetStream is not enabled for this account on "+url,
			"enable JetStream on the server (fleetd's own NATS, 'fleetd up', has it)"),
			skip("clock", "not checked: no JetStream", ""))
	case err != nil:
		// An agent's key may not read stream info (natsauth): not a
		// fault of the fabric, only of what this check can see.
		if cause := context.Cause(ctx); errors.Is(cause, nats.ErrPermissionViolation) {
			err = cause
		}
		return append(out, warn(stream, "cannot read "+events.Stream+"'s info as "+as+": "+oneLine(err),
			"check it with a gateway's or the admin's credentials (an agent's may not read it)"),
			skip("clock", "not checked: no stream info", ""))
	}
	info := s.CachedInfo()
	out = append(out, streamResult(stream, info))
	return append(out, checkClock(ctx, s, info, before, after))
}

// streamResult describes FLEET: its size, replicas and leader.
func streamResult(what string, info *jetstream.StreamInfo) Result {
	detail := fmt.Sprintf("%s: %d events, %s, %d replica(s)", events.Stream, info.State.Msgs, bytesText(info.State.Bytes), info.Config.Replicas)
	if c := info.Cluster; c != nil {
		if c.Leader == "" {
			return fail(what, detail+", no leader", "a majority of the cluster's JetStream servers must be up: start the missing hosts ('fleetd up')")
		}
		detail += ", leader " + c.Leader
		var behind []string
		for _, p := range c.Replicas {
			if p != nil && (p.Offline || !p.Current) {
				behind = append(behind, p.Name)
			}
		}
		if len(behind) > 0 {
			return warn(what, detail+"; replicas not current: "+strings.Join(behind, ", "), "start or reconnect those hosts; the stream survives while a majority is current")
		}
	}
	return ok(what, detail)
}

// checkClock compares this machine's clock with the NATS server's (the
// time in its answer to the stream info request, against the middle of
// the request) and each live host's with the server's (a heartbeat's own
// time against the time the server stored it).
func checkClock(ctx context.Context, s jetstream.Stream, info *jetstream.StreamInfo, before, after time.Time) Result {
	const what = "clock"
	if info.TimeStamp.IsZero() {
		return skip(what, "not checked: the server does not say its time (nats-server before 2.10)", "")
	}
	half := after.Sub(before) / 2
	here := info.TimeStamp.Sub(before.Add(half))
	worst, who := max(abs(here)-half, 0), "this machine"
	parts := []string{fmt.Sprintf("this machine %s against NATS (±%s)", signed(here), half.Round(time.Microsecond))}
	hosts, err := hostSkews(ctx, s)
	if err == nil {
		for _, h := range hosts {
			parts = append(parts, fmt.Sprintf("host %s %s", h.host, signed(h.skew)))
			if abs(h.skew) > worst {
				worst, who = abs(h.skew), "host "+h.host
			}
		}
	} else {
		parts = append(parts, "hosts not read: "+oneLine(err))
	}
	detail := strings.Join(parts, "; ")
	fix := "run NTP on " + who + " (chronyd, systemd-timesyncd: timedatectl set-ntp true)"
	switch {
	case worst >= clockFail:
		return fail(what, detail, fix)
	case worst >= clockWarn:
		return warn(what, detail, fix)
	}
	return ok(what, detail)
}

type hostSkew struct {
	host string
	skew time.Duration
}

// hostSkews reads each host's last up or heartbeat event (at most
// maxHosts) stored in the last minute, a host still running: its skew
// is the event's time, by its gateway's clock, less the time the server
// stored it (which adds the append's latency, milliseconds).
func hostSkews(ctx context.Context, s jetstream.Stream) ([]hostSkew, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("fleet.host.*.up"))
	if err != nil {
		return nil, err
	}
	subjects := slices.Sorted(func(yield func(string) bool) {
		for subj := range info.State.Subjects {
			if !yield(subj) {
				return
			}
		}
	})
	if len(subjects) > maxHosts {
		subjects = subjects[:maxHosts]
	}
	reg := events.NewRegistry()
	var out []hostSkew
	for _, subj := range subjects {
		msg, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			return out, err
		}
		if time.Since(msg.Time) > time.Minute {
			continue // a host gone: its clock is not the fleet's concern now
		}
		ev, err := reg.Decode(msg.Subject, msg.Data)
		if err != nil || ev.Time.IsZero() {
			continue
		}
		host := strings.TrimSuffix(strings.TrimPrefix(subj, "fleet.host."), ".up")
		out = append(out, hostSkew{host: host, skew: ev.Time.Sub(msg.Time)})
	}
	return out, nil
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// signed is d with its sign, rounded to a readable precision: +3ms, -1.2s.
func signed(d time.Duration) string {
	r := time.Millisecond
	if abs(d) < 10*time.Millisecond {
		r = 100 * time.Microsecond
	}
	d = d.Round(r)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// shimFixes say what to do about each code a 503 from /healthz carries.
var shimFixes = map[string]string{
	"nats_unavailable": "the shim's gateway lost NATS: see its log, and check the nats line above",
	"stream_lost":      "FLEET is gone: 'fleetd provision' recreates it (or 'fleetd up' does, after --recreate-stream)",
	"store_full":       "the store is full: free disk, raise --max-store, or trim the log with --retain",
	"store_low":        "the store is nearly full: free disk, raise --max-store, or trim the log with --retain",
	"behind":           "the gateway's projection lags the log: wait a moment, then see its log",
}

// checkShim asks the lead shim's /healthz, then an authenticated read
// (/roles) to learn whether it takes this token: /healthz answers anyone.
func checkShim(ctx context.Context, cfg Config) []Result {
	const what = "shim"
	var opts []leadshim.ClientOption
	if cfg.ShimTLS != nil {
		opts = append(opts, leadshim.WithTLS(cfg.ShimTLS))
	}
	c := leadshim.NewClient(cfg.ShimURL, cfg.ShimToken, opts...)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var h leadshim.Health
	err := c.Do(ctx, http.MethodGet, "/healthz", nil, &h)
	var ce *leadshim.ClientError
	switch {
	case errors.As(err, &ce) && ce.Status == http.StatusServiceUnavailable:
		_ = json.Unmarshal([]byte(ce.Body.Message), &h) // a 503 carries Health, not an error body
		fix := shimFixes[h.Code]
		if fix == "" {
			fix = "see the gateway's log"
		}
		return []Result{fail(what, fmt.Sprintf("%s/healthz: unavailable (%s): %s", cfg.ShimURL, h.Code, h.Error), fix)}
	case err != nil:
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", cfg.Timeout)
		}
		detail := oneLine(err)
		if !strings.Contains(detail, cfg.ShimURL) {
			detail = cfg.ShimURL + ": " + detail
		}
		return []Result{fail(what, detail, "start the fabric here ('fleetd up' serves the shim on 127.0.0.1:8765), or point --url (FLEET_URL) at it")}
	}
	if err := c.Do(ctx, http.MethodGet, "/roles", nil, nil); err != nil {
		if errors.As(err, &ce) && (ce.Status == http.StatusUnauthorized || ce.Status == http.StatusForbidden) {
			return []Result{fail(what, cfg.ShimURL+" answers, but refuses this token", "pass the shim's token: --token (FLEET_TOKEN)")}
		}
		return []Result{warn(what, cfg.ShimURL+"/roles: "+oneLine(err), "see the gateway's log")}
	}
	detail := fmt.Sprintf("%s: %s, NATS %s, events applied %d of %d", cfg.ShimURL, h.Status, h.NATS, h.Applied, h.LastSeq)
	if h.Status == "degraded" {
		reasons := h.Reasons
		if len(reasons) > 3 {
			reasons = append(reasons[:3:3], fmt.Sprintf("and %d more", len(h.Reasons)-3))
		}
		return []Result{warn(what, detail+": "+strings.Join(reasons, "; "), "'fleetd roster' shows the agents named; 'fleetd cost' the budgets")}
	}
	return []Result{ok(what, detail)}
}
