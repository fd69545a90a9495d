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
	// ErrDuplicateBatch means a batch was refused because it repeats an
	// event the stream already holds; an atomic batch is all or nothing,
	// so a retried batch that already landed reports this.
	ErrDuplicateBatch = errors.New("events: batch contains an already stored event")
	// ErrStreamLost means the FLEET stream is not there (deleted, or not
	// created yet): nothing can be appended or read until it exists again.
	// It is JetStream's "stream not found" (10059). A stream that comes
	// back is a new one: its sequences may start again at 1
	// (StreamState.Created tells them apart).
	ErrStreamLost = errors.New("events: the FLEET stream is missing")
	// ErrStoreFull means JetStream refused a write for lack of storage: the
	// server's store limit (10023, 10047) or the account's (10002) is
	// reached. Writes fail until space is freed.
	ErrStoreFull = errors.New("events: the JetStream store is full")
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
		case jetstream.JSErrCodeStreamNotFound:
			return errors.Join(ErrStreamLost, err)
		case 10023, 10047, 10002: // insufficient resources, storage resources exceeded, account limits
			return errors.Join(ErrStoreFull, err)
		}
	}
	// A publish that no stream answered is not taken for a lost stream: a
	// cluster answers so for a moment right after creating one. Whether
	// the stream is there is asked of the JetStream API (10059).
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return errors.Join(ErrStreamLost, err)
	}
	return err
}
