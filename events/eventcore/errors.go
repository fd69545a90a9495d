package eventcore

import "errors"

var (
	// ErrInvalidToken means an agent, role, host or job id cannot be a
	// subject token.
	ErrInvalidToken = errors.New("events: invalid subject token")
	// ErrUnknownType means an event type is not in the registry.
	ErrUnknownType = errors.New("events: unknown event type")
	// ErrMalformed means a message on fleet.> is not a valid event.
	ErrMalformed = errors.New("events: malformed event")
	// ErrTooLarge means a string field of an event is over its Limits:
	// readers skip such a message (it is also ErrMalformed) and Append
	// refuses to write one.
	ErrTooLarge = errors.New("events: event field too large")
)
