package herdrapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind names an event in the dotted spelling herdr uses for
// subscription types ("pane.created"). Lifecycle lines arrive snake_case
// ("pane_created"); DecodeEvent normalises both to this form, so one
// constant serves for subscribing and for switching on received events.
type EventKind string

// The event kinds fleetd subscribes to or receives. The three per-pane kinds
// (agent status, output, scroll) need Subscription.PaneID.
const (
	EventWorkspaceCreated  EventKind = "workspace.created"
	EventWorkspaceUpdated  EventKind = "workspace.updated"
	EventWorkspaceClosed   EventKind = "workspace.closed"
	EventWorkspaceFocused  EventKind = "workspace.focused"
	EventTabCreated        EventKind = "tab.created"
	EventTabClosed         EventKind = "tab.closed"
	EventTabFocused        EventKind = "tab.focused"
	EventPaneCreated       EventKind = "pane.created"
	EventPaneClosed        EventKind = "pane.closed"
	EventPaneUpdated       EventKind = "pane.updated"
	EventPaneFocused       EventKind = "pane.focused"
	EventPaneMoved         EventKind = "pane.moved"
	EventPaneExited        EventKind = "pane.exited"
	EventPaneAgentDetected EventKind = "pane.agent_detected"
	EventLayoutUpdated     EventKind = "layout.updated"

	EventPaneAgentStatusChanged EventKind = "pane.agent_status_changed"
	EventPaneOutputMatched      EventKind = "pane.output_matched"
	EventPaneScrollChanged      EventKind = "pane.scroll_changed"
)

// OutputMatch is the pattern of an output_matched subscription.
type OutputMatch struct {
	Type  string `json:"type"` // "substring" or "regex"
	Value string `json:"value"`
}

// Subscription is one entry of an events.subscribe request. Lifecycle kinds
// need only Type; per-pane kinds need PaneID, and output_matched also Source
// and Match.
type Subscription struct {
	Type   EventKind
	PaneID string
	// AgentStatus, when set on a status subscription, filters to that
	// status and makes herdr emit one initial event if the pane already has
	// it.
	AgentStatus AgentStatus
	Source      ReadSource
	Lines       int
	Match       *OutputMatch
	// KeepANSI sends strip_ansi:false on output_matched subscriptions.
	KeepANSI bool
}

// MarshalJSON omits every field the subscription kind does not use, so the
// entry validates against herdr's schema.
func (s Subscription) MarshalJSON() ([]byte, error) {
	w := struct {
		Type        EventKind    `json:"type"`
		PaneID      string       `json:"pane_id,omitempty"`
		AgentStatus AgentStatus  `json:"agent_status,omitempty"`
		Source      ReadSource   `json:"source,omitempty"`
		Lines       int          `json:"lines,omitempty"`
		Match       *OutputMatch `json:"match,omitempty"`
		StripANSI   *bool        `json:"strip_ansi,omitempty"`
	}{s.Type, s.PaneID, s.AgentStatus, s.Source, s.Lines, s.Match, nil}
	if s.KeepANSI {
		w.StripANSI = new(bool)
	}
	return json.Marshal(w)
}

// Lifecycle returns one parameterless subscription per kind.
func Lifecycle(kinds ...EventKind) []Subscription {
	subs := make([]Subscription, len(kinds))
	for i, k := range kinds {
		subs[i] = Subscription{Type: k}
	}
	return subs
}

// Event is one decoded event line, whichever of herdr's two formats it came
// in. Fields the event does not carry are zero; IDs are filled from the
// embedded pane, tab, workspace or layout when the line has no top-level id.
type Event struct {
	Kind EventKind
	// Lifecycle is true for snake_case, type-tagged lines. herdr replays
	// those to every new subscriber (up to 512 of them), so consumers must
	// dedupe them against a snapshot; per-pane lines are never replayed.
	Lifecycle   bool
	PaneID      string
	WorkspaceID string
	TabID       string
	Agent       string
	AgentStatus AgentStatus
	Title       string
	Pane        *PaneInfo
	Tab         *TabInfo
	Workspace   *WorkspaceInfo
	Layout      *Layout
	// Released and FinalStatus are set on pane.agent_detected when the
	// agent went away.
	Released    bool
	FinalStatus AgentStatus
	MatchedLine string
	Read        *PaneRead
	// Raw is the whole line as received, for fields this type lacks.
	Raw json.RawMessage
}

type eventData struct {
	Type        string         `json:"type"`
	PaneID      string         `json:"pane_id"`
	WorkspaceID string         `json:"workspace_id"`
	TabID       string         `json:"tab_id"`
	Agent       string         `json:"agent"`
	AgentStatus AgentStatus    `json:"agent_status"`
	Title       string         `json:"title"`
	Pane        *PaneInfo      `json:"pane"`
	Tab         *TabInfo       `json:"tab"`
	Workspace   *WorkspaceInfo `json:"workspace"`
	Layout      *Layout        `json:"layout"`
	Released    bool           `json:"released"`
	FinalStatus AgentStatus    `json:"final_status"`
	MatchedLine string         `json:"matched_line"`
	Read        *PaneRead      `json:"read"`
}

// DecodeEvent decodes one event line of either format: lifecycle
// ({"event":"pane_created","data":{"type":"pane_created",…}}) or
// subscription ({"event":"pane.agent_status_changed","data":{…}}).
func DecodeEvent(line []byte) (Event, error) {
	var env struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return Event{}, fmt.Errorf("decode herdr event: %w", err)
	}
	if env.Event == "" {
		return Event{}, errors.New("decode herdr event: no event name")
	}
	var d eventData
	if len(env.Data) > 0 {
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return Event{}, fmt.Errorf("decode herdr event %s: %w", env.Event, err)
		}
	}
	e := Event{
		Kind:        normaliseKind(env.Event),
		Lifecycle:   !strings.Contains(env.Event, "."),
		PaneID:      d.PaneID,
		WorkspaceID: d.WorkspaceID,
		TabID:       d.TabID,
		Agent:       d.Agent,
		AgentStatus: d.AgentStatus,
		Title:       d.Title,
		Pane:        d.Pane,
		Tab:         d.Tab,
		Workspace:   d.Workspace,
		Layout:      d.Layout,
		Released:    d.Released,
		FinalStatus: d.FinalStatus,
		MatchedLine: d.MatchedLine,
		Read:        d.Read,
		Raw:         append(json.RawMessage(nil), line...),
	}
	switch {
	case e.Pane != nil:
		fill(&e.PaneID, e.Pane.PaneID)
		fill(&e.WorkspaceID, e.Pane.WorkspaceID)
		fill(&e.TabID, e.Pane.TabID)
	case e.Tab != nil:
		fill(&e.TabID, e.Tab.TabID)
		fill(&e.WorkspaceID, e.Tab.WorkspaceID)
	case e.Workspace != nil:
		fill(&e.WorkspaceID, e.Workspace.WorkspaceID)
	case e.Layout != nil:
		fill(&e.WorkspaceID, e.Layout.WorkspaceID)
		fill(&e.TabID, e.Layout.TabID)
	case e.Read != nil:
		fill(&e.WorkspaceID, e.Read.WorkspaceID)
		fill(&e.TabID, e.Read.TabID)
	}
	return e, nil
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// normaliseKind maps "pane_agent_detected" to "pane.agent_detected": the
// resource prefix of every herdr event kind is one word, so the first
// underscore is the one the dotted spelling replaces.
func normaliseKind(s string) EventKind {
	if strings.Contains(s, ".") {
		return EventKind(s)
	}
	if i := strings.IndexByte(s, '_'); i > 0 {
		return EventKind(s[:i] + "." + s[i+1:])
	}
	return EventKind(s)
}

// Stream is a live events.subscribe connection. It owns one reader
// goroutine, which Close stops and waits for.
type Stream struct {
	conn    net.Conn
	br      *bufio.Reader
	events  chan Event
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	skipped atomic.Int64

	mu  sync.Mutex
	err error
}

// Subscribe opens a dedicated connection, sends events.subscribe and waits
// for herdr's subscription_started ack; a rejected entry (say, a status
// subscription for an unknown pane) comes back as the typed error herdr
// sent. ctx bounds only this handshake: afterwards the stream lives until
// Close or until herdr goes away (then Err reports ErrDisconnected).
func (c *Client) Subscribe(ctx context.Context, subs []Subscription) (*Stream, error) {
	const method = "events.subscribe"
	ctx, cancel := c.withDefaultDeadline(ctx)
	defer cancel()
	if subs == nil {
		subs = []Subscription{}
	}
	params := struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}{subs}
	id := c.nextID()
	conn, br, stop, err := c.open(ctx, id, method, params)
	if err != nil {
		return nil, err
	}
	line, err := readLine(br)
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: connection closed before subscription_started", ErrBadResponse)
	}
	if err == nil {
		err = decodeResponse(line, id, method, "subscription_started", nil)
	} else {
		err = c.ioError(ctx, method, err)
	}
	// From here on ctx must not govern the connection: clear the deadline
	// only if the cancellation hook had not already fired.
	if err == nil && !stop() {
		err = fmt.Errorf("herdr %s: %w", method, ctx.Err())
	}
	stop()
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	s := &Stream{
		conn:    conn,
		br:      br,
		events:  make(chan Event, 64),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go s.read()
	return s, nil
}

// Events delivers decoded events in arrival order. It is closed when the
// stream ends; Err then says why.
func (s *Stream) Events() <-chan Event { return s.events }

// Err is nil while the stream runs and after Close; otherwise it wraps
// ErrDisconnected with the underlying cause.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Skipped counts lines that did not decode as events. They are dropped, not
// fatal: a newer herdr may send shapes this package does not know.
func (s *Stream) Skipped() int64 { return s.skipped.Load() }

// Close ends the subscription (closing the socket is how herdr learns of
// it) and waits for the reader goroutine. It is idempotent.
func (s *Stream) Close() error {
	s.once.Do(func() {
		close(s.closing)
		s.conn.Close()
	})
	<-s.done
	return nil
}

func (s *Stream) read() {
	defer close(s.done)
	defer close(s.events)
	for {
		line, err := readLine(s.br)
		if err != nil {
			select {
			case <-s.closing:
			default:
				s.mu.Lock()
				s.err = fmt.Errorf("%w: %w", ErrDisconnected, err)
				s.mu.Unlock()
			}
			return
		}
		ev, err := DecodeEvent(line)
		if err != nil {
			s.skipped.Add(1)
			continue
		}
		select {
		case s.events <- ev:
		case <-s.closing:
			return
		}
	}
}
