package turns

import (
	"fmt"
	"strings"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// CheckText applies the text rule (DESIGN.md) to what a turn asks to type:
// a text (a prompt) or a command (a slash command), never both or
// neither. A text is normalised by lifecycle.Normalize — what the model
// receives is that and nothing else — and must not be empty (or only
// white space) afterwards. It returns the normalised text ("" for a
// command) and what normalising removed.
//
// Errors: ErrTextAndCommand, ErrEmptyText.
func CheckText(text, command string) (string, events.Normalization, error) {
	switch {
	case text != "" && command != "":
		return "", events.Normalization{}, ErrTextAndCommand
	case command != "":
		return "", events.Normalization{}, nil
	case text == "":
		return "", events.Normalization{}, ErrEmptyText
	}
	norm, n := lifecycle.Normalize(text)
	if strings.TrimSpace(norm) == "" {
		return "", n, fmt.Errorf("%w once control sequences are removed", ErrEmptyText)
	}
	return norm, n, nil
}

// payloadOverhead is what an event adds around its text: the envelope and
// the other fields. The text itself is JSON-escaped, at most twice as
// long, so a text of n bytes needs at most 2n+payloadOverhead.
const payloadOverhead = 4096

// Limits bound a turn's text before anything is queued, so a sender can
// refuse it (413) instead of the log failing the append. The zero value
// bounds nothing: the log's own limits (events.ErrTooLarge) still hold.
type Limits struct {
	// MaxText is the largest text in bytes, once normalised; 0: no bound.
	MaxText int
	// MaxPayload is the NATS server's max_payload, the largest message it
	// takes; 0: unknown.
	MaxPayload int64
}

// Check refuses a text over MaxText, or one whose event could not fit in
// MaxPayload, with a *SizeError (ErrTooLarge).
func (l Limits) Check(text string) error {
	if l.MaxText > 0 && len(text) > l.MaxText {
		return &SizeError{Bytes: len(text), Limit: l.MaxText}
	}
	if need := 2*int64(len(text)) + payloadOverhead; l.MaxPayload > 0 && need > l.MaxPayload {
		return &SizeError{Bytes: len(text), Limit: int(max(0, (l.MaxPayload-payloadOverhead)/2)), MaxPayload: l.MaxPayload}
	}
	return nil
}

// addNorm sums two accounts of what the text rule removed.
func addNorm(a, b events.Normalization) events.Normalization {
	return events.Normalization{ControlSequences: a.ControlSequences + b.ControlSequences,
		CarriageReturns: a.CarriageReturns + b.CarriageReturns, RemovedBytes: a.RemovedBytes + b.RemovedBytes}
}
