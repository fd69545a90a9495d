package herdrtest

import "encoding/json"

// hubSize is how many lifecycle events herdr's event hub retains; a new
// subscriber is replayed every retained event that matches.
const hubSize = 512

type hubEvent struct {
	seq  uint64
	data eventData
	line []byte // the format-A line, as lifecycle subscribers receive it
}

// hub is herdr's in-memory event ring. Sequence numbers never reach the
// wire; subscribers use them as cursors.
type hub struct {
	events []hubEvent
	next   uint64
}

func (h *hub) add(d eventData) {
	line, _ := json.Marshal(eventEnvelope{Event: d.Type, Data: d})
	h.events = append(h.events, hubEvent{seq: h.next, data: d, line: line})
	h.next++
	if len(h.events) > hubSize {
		h.events = append(h.events[:0:0], h.events[len(h.events)-hubSize:]...)
	}
}

// since returns the retained events with seq ≥ cursor; events that already
// fell out of the ring are silently gone, as in herdr.
func (h *hub) since(cursor uint64) []hubEvent {
	for i, e := range h.events {
		if e.seq >= cursor {
			return h.events[i:]
		}
	}
	return nil
}

// emitLocked records a lifecycle event and wakes waiters.
func (s *Server) emitLocked(d eventData) {
	s.hub.add(d)
	s.notifyLocked()
}
