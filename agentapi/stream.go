package agentapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Event types of agentapi's streams.
const (
	// EventStatus: the status changed (Event.Status).
	EventStatus = "status_change"
	// EventMessage: a message was added or its text changed (Event.Message);
	// while the agent works the last agent message changes with every
	// redraw.
	EventMessage = "message_update"
	// EventError: agentapi reported an error (Event.Error), e.g. a state
	// file it could not load. The agent's death is not one: the stream
	// ends instead.
	EventError = "agent_error"
	// EventScreen: the whole screen (Event.Screen), on the screen stream.
	EventScreen = "screen"
)

// AgentError is an agent_error event.
type AgentError struct {
	Message string    `json:"message"`
	Level   string    `json:"level"` // "warning" or "error"
	Time    time.Time `json:"time"`
}

// Event is one server-sent event of Events or ScreenUpdates; the field
// its Type names is set.
type Event struct {
	Type    string
	Status  Status
	Message Message
	Error   AgentError
	Screen  string
	// Data is the event's JSON, for types this package does not know.
	Data json.RawMessage
}

// Stream is an open event stream. Next is for one reader; Close may be
// called from anywhere, more than once.
type Stream struct {
	body   io.ReadCloser
	r      *bufio.Reader
	cancel context.CancelFunc
	once   sync.Once
}

// stream opens an SSE endpoint. The request lives until Close (or ctx
// ends): a stream has no default deadline.
func (c *Client) stream(ctx context.Context, path string) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("agentapi GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("agentapi GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, apiError("GET "+path, resp.StatusCode, raw)
	}
	// A screen event is the whole screen: 80×1000 cells by agentapi's
	// default, over 100 KB of JSON, so the reader has no line limit.
	return &Stream{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10), cancel: cancel}, nil
}

// Next blocks for the next event. It returns io.EOF when the server ended
// the stream (it stopped, or its agent exited), and an error once the
// stream's context ended or Close was called.
func (s *Stream) Next() (Event, error) {
	var name string
	var data strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() == 0 && name == "" {
				continue
			}
			return decodeEvent(name, []byte(data.String()))
		case strings.HasPrefix(line, ":"): // an SSE comment (keep-alive)
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

func decodeEvent(name string, data []byte) (Event, error) {
	ev := Event{Type: name, Data: json.RawMessage(data)}
	var err error
	switch name {
	case EventStatus:
		var b struct {
			Status Status `json:"status"`
		}
		err = json.Unmarshal(data, &b)
		ev.Status = b.Status
	case EventMessage:
		var b struct {
			ID      int       `json:"id"`
			Role    string    `json:"role"`
			Message string    `json:"message"`
			Time    time.Time `json:"time"`
		}
		err = json.Unmarshal(data, &b)
		ev.Message = Message{ID: b.ID, Role: b.Role, Content: b.Message, Time: b.Time}
	case EventError:
		err = json.Unmarshal(data, &ev.Error)
	case EventScreen:
		var b struct {
			Screen string `json:"screen"`
		}
		err = json.Unmarshal(data, &b)
		ev.Screen = b.Screen
	}
	if err != nil {
		return Event{}, fmt.Errorf("agentapi %s event %q: %w", name, truncate(data, 200), err)
	}
	return ev, nil
}

// Close ends the stream and releases its connection.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}
