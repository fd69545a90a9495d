package events

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrConcurrency means an append's expected last sequence did not match:
	// someone else wrote to the aggregate first. Re-read and decide again.
	// It covers JetStream codes 10071 and 10164 (the replicated form).
	ErrConcurrency = errors.New("events: concurrent append to aggregate")
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
	// ErrDuplicateBatch means a batch was refused because it repeats an
	// event the stream already holds; an atomic batch is all or nothing,
	// so a retried batch that already landed reports this.
	ErrDuplicateBatch = errors.New("events: batch contains an already stored event")
)

// translate maps JetStream's API errors to ours, once, at the boundary.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return errors.Join(ErrConcurrency, err)
		case 10201: // JSAtomicPublishContainsDuplicateMessageErr
			return errors.Join(ErrDuplicateBatch, err)
		}
	}
	return err
}
