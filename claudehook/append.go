package claudehook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"time"

	// events' pure half, under its usual name: the types are events'
	// own (events aliases them), without nats.go.
	events "github.com/fleetd/fleetd/events/eventcore"
	"github.com/fleetd/fleetd/internal/natslite"
	"github.com/fleetd/fleetd/natsauth/natscreds"
)

// Appender is the half of events.Log a hook's replay needs (ReplayFresh):
// an events.Log is one, and so is the hook's own connection.
type Appender interface {
	Append(ctx context.Context, ev events.Event, opts ...events.AppendOption) (events.Ack, error)
}

// Log is what ReplaySpool needs of events.Log, which satisfies it:
// appends, and a read to see whether an event is stored already. It is
// declared here so that claudehook need not import events, and with it
// nats.go, which every hook exec would link and initialise.
type Log interface {
	Appender
	Read(ctx context.Context, q events.Query) iter.Seq2[events.Event, error]
}

// appendAll returns how many of evs were acknowledged, and why it stopped.
func appendAll(ctx context.Context, evs []events.Event, env func(string) string, spool string, o Options) (int, error) {
	nc, err := dial(ctx, env, "fleetd hook "+evs[0].Subject, o.ConnectTimeout)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	log := &natsLog{nc: nc, registry: events.NewRegistry(), source: evs[0].Source, now: o.Now, newID: o.NewID}
	// The turn is read, with the handshake, while the prompt's hook may
	// still be at work; nothing is appended before it is done.
	turn := CurrentTurn(ctx, nc, evs[0].Subject)
	if o.ordered != nil {
		o.ordered(evs)
	}
	if !o.NoReplay {
		// Only this agent's spool, and only what the dedupe window still
		// guards: an agent's NATS user may append only its own events
		// and read nothing of the log (natsauth), so the gateway replays
		// the rest, looking in the log first.
		n, err := ReplayFresh(ctx, log, filepath.Join(spool, evs[0].Subject), o.Now)
		if n > 0 {
			fmt.Fprintf(o.Stderr, "fleetd hook: replayed %d spooled event(s)\n", n)
		}
		if err != nil {
			fmt.Fprintf(o.Stderr, "fleetd hook: spool replay: %v\n", err)
			if ctx.Err() != nil {
				return 0, err // keep order: ours go after the spooled ones
			}
		}
	}
	if turn != "" {
		for i := range evs {
			evs[i].CorrelationID = turn
		}
	}
	return log.AppendAll(ctx, evs)
}

// dial connects to FLEET_NATS_URL as the pane's identity: the agent's key
// from `fleetd auth` (FLEET_NATS_CREDS, which also sets its inbox prefix,
// the only inbox it may subscribe to), else the NATS token
// (FLEET_NATS_TOKEN), else what the URL carries (a user and password, or
// a token). It is the natslite client, not nats.go: see natslite's doc.
func dial(ctx context.Context, env func(string) string, name string, timeout time.Duration) (*natslite.Conn, error) {
	// FLEET_NATS_HOOK_URL: the same servers with DNS names resolved at
	// launch (herdrbridge), as the hook resolves none.
	url := cmp.Or(env("FLEET_NATS_HOOK_URL"), env("FLEET_NATS_URL"))
	if url == "" {
		return nil, errors.New("FLEET_NATS_URL is not set")
	}
	// Pipelined: the roster read rides with the handshake, so a hook
	// pays two round trips (handshake and read, then its events), not
	// four; a refused login fails the read and the appends, and spools.
	o := natslite.Options{Name: name, Timeout: timeout, Pipelined: true}
	switch creds, token := env("FLEET_NATS_CREDS"), env("FLEET_NATS_TOKEN"); {
	case creds != "":
		k, err := natscreds.Load(creds)
		if err != nil {
			return nil, err
		}
		o.NKey, o.JWT, o.Sign, o.InboxPrefix = k.PublicKey, k.JWT, k.Sign, k.InboxPrefix
	case token != "":
		o.Token = token
	}
	nc, err := natslite.Connect(ctx, url, o)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return nc, nil
}

// natsLog appends as events.Log does — the same checks, the same
// envelope, the event id as Nats-Msg-Id, the stream (and any expected
// sequence) as JetStream's expected headers, the publish acknowledgement
// awaited and tried again while no stream answers — over the hook's
// natslite connection.
type natsLog struct {
	nc       *natslite.Conn
	registry *events.Registry
	source   string
	now      func() time.Time
	newID    func() string
}

// publishRetryWait is events.Log's wait between tries of a publish no
// stream answered.
const publishRetryWait = 100 * time.Millisecond

// JetStream's headers, as nats.go's jetstream package spells them.
const (
	msgIDHeader                   = "Nats-Msg-Id"
	expectedStreamHeader          = "Nats-Expected-Stream"
	expectedLastSubjSeqHeader     = "Nats-Expected-Last-Subject-Sequence"
	expectedLastSubjSeqSubjHeader = "Nats-Expected-Last-Subject-Sequence-Subject"
)

func (l *natsLog) Append(ctx context.Context, ev events.Event, opts ...events.AppendOption) (events.Ack, error) {
	out, ev, err := l.prepare(ev, opts...)
	if err != nil {
		return events.Ack{}, err
	}
	ack, err := l.nc.Publish(ctx, out.Subject, out.Header, out.Data, publishRetryWait)
	if err != nil {
		return events.Ack{}, fmt.Errorf("append %s: %w", out.Subject, err)
	}
	return events.Ack{ID: ev.ID, Subject: out.Subject, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// AppendAll appends evs in order as Append does, in one round trip
// (natslite's PublishAll), and returns how many were acknowledged. An
// event no reader would take stops it before anything is sent.
func (l *natsLog) AppendAll(ctx context.Context, evs []events.Event) (int, error) {
	outs := make([]natslite.Out, len(evs))
	for i, ev := range evs {
		var err error
		if outs[i], _, err = l.prepare(ev); err != nil {
			return 0, err
		}
	}
	acks, err := l.nc.PublishAll(ctx, outs, publishRetryWait)
	if err != nil {
		return len(acks), fmt.Errorf("append %s: %w", outs[len(acks)].Subject, err)
	}
	return len(acks), nil
}

// prepare fills in ev's id, time and source, checks it as events.Log
// does, and makes its message: the envelope, the id as Nats-Msg-Id, the
// stream and any expected sequence as JetStream's headers.
func (l *natsLog) prepare(ev events.Event, opts ...events.AppendOption) (natslite.Out, events.Event, error) {
	if ev.ID == "" {
		ev.ID = l.newID()
	}
	if ev.Time.IsZero() {
		ev.Time = l.now()
	}
	if ev.Source == "" {
		ev.Source = l.source
	}
	subject, err := ev.StreamSubject()
	if err == nil {
		err = l.registry.Check(ev) // what no reader would take is not written
	}
	if err != nil {
		return natslite.Out{}, ev, fmt.Errorf("append: %w", err)
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		return natslite.Out{}, ev, fmt.Errorf("append: %w", err)
	}
	h := natslite.Header{}
	h.Set(msgIDHeader, ev.ID)
	h.Set(expectedStreamHeader, events.Stream)
	if seq, filter, ok := events.Expected(opts...); ok {
		h.Set(expectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
		if filter != "" {
			h.Set(expectedLastSubjSeqSubjHeader, filter)
		}
	}
	return natslite.Out{Subject: subject, Header: h, Data: body}, ev, nil
}

// CurrentTurn reads agent's current turn from its roster row
// (projections.Agent), best effort (lifecycle joins hook events to the
// turn in flight without it): one direct get of the agent's own row
// (projections.RosterGetSubject), the only read of the bucket an agent's
// credentials allow (natsauth), and one round trip fewer than opening the
// bucket first. agent must be a valid agent id (Run checks it first).
func CurrentTurn(ctx context.Context, nc *natslite.Conn, agent string) string {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	msg, err := nc.Request(ctx, rosterGetSubject(agent), nil, nil)
	if err != nil || msg.Status != 0 || msg.Header.Get("KV-Operation") != "" {
		return "" // no row, a deleted row, or no answer
	}
	var row rosterRow
	if json.Unmarshal(msg.Data, &row) != nil {
		return ""
	}
	return row.CurrentTurn
}

// rosterGetSubject is projections.RosterGetSubject(agent) for a valid
// agent id (which is its own key: projections.Key encodes only names
// outside the key alphabet). It is spelled here, pinned to projections'
// by a test, because importing projections — its folds, samber/lo,
// x/text — is a third of what the hook binary would otherwise link and
// initialise on every exec.
func rosterGetSubject(agent string) string {
	return "$JS.API.DIRECT.GET.KV_fleet_roster.$KV.fleet_roster." + agent
}

// rosterRow is the one field of a projections.Agent row the hook reads
// (pinned to projections.Agent's JSON by the same test).
type rosterRow struct {
	CurrentTurn string `json:"current_turn"`
}
