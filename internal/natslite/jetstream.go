package natslite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// PubAck is JetStream's acknowledgement of a stored (or deduplicated)
// message.
type PubAck struct {
	Stream    string `json:"stream"`
	Sequence  uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// Publish appends data to the stream that takes subject and waits for its
// acknowledgement. While no stream answers (503: an election, a stream
// being made) it tries again every retryWait until ctx ends, as the
// events log's nats.go publish does. JetStream's refusal is an *APIError.
func (c *Conn) Publish(ctx context.Context, subject string, hdr Header, data []byte, retryWait time.Duration) (PubAck, error) {
	for {
		m, err := c.Request(ctx, subject, hdr, data)
		if errors.Is(err, ErrNoResponders) {
			if err := waitRetry(ctx, err, retryWait); err != nil {
				return PubAck{}, err
			}
			continue
		}
		if err != nil {
			return PubAck{}, err
		}
		return pubAck(m)
	}
}

// Out is one message of PublishAll.
type Out struct {
	Subject string
	Header  Header
	Data    []byte
}

// PublishAll appends msgs in order as Publish does, writing them all
// before awaiting any acknowledgement: one round trip for all, and
// JetStream stores one connection's messages in the order they came. It
// returns the acknowledgements of the prefix stored, and why it stopped.
// A message no stream answered is published again, with those after it,
// one at a time as Publish does; give each a Nats-Msg-Id, so that a
// later one stored in the meantime is deduplicated, not doubled.
func (c *Conn) PublishAll(ctx context.Context, msgs []Out, retryWait time.Duration) ([]PubAck, error) {
	replies := make([]string, 0, len(msgs))
	for _, m := range msgs {
		r, err := c.Send(ctx, m.Subject, m.Header, m.Data)
		if err != nil {
			return nil, err
		}
		replies = append(replies, r)
	}
	acks := make([]PubAck, 0, len(msgs))
	for i, r := range replies {
		m, err := c.Await(ctx, r)
		if errors.Is(err, ErrNoResponders) {
			for _, rest := range replies[i+1:] {
				if _, err := c.Await(ctx, rest); err != nil && !errors.Is(err, ErrNoResponders) {
					return acks, err
				}
			}
			for _, m := range msgs[i:] {
				ack, err := c.Publish(ctx, m.Subject, m.Header, m.Data, retryWait)
				if err != nil {
					return acks, err
				}
				acks = append(acks, ack)
			}
			return acks, nil
		}
		if err != nil {
			return acks, err
		}
		ack, err := pubAck(m)
		if err != nil {
			return acks, err
		}
		acks = append(acks, ack)
	}
	return acks, nil
}

// waitRetry waits retryWait before another try of a publish no stream
// answered (err), or returns why ctx ended first.
func waitRetry(ctx context.Context, err error, retryWait time.Duration) error {
	t := time.NewTimer(retryWait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w (until %w)", err, ctx.Err())
	}
}

// pubAck reads JetStream's answer to a publish.
func pubAck(m Msg) (PubAck, error) {
	var ack struct {
		PubAck
		Error *APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		return PubAck{}, fmt.Errorf("%w: publish ack %q: %v", ErrProtocol, m.Data, err)
	}
	if ack.Error != nil {
		return PubAck{}, ack.Error
	}
	if ack.Stream == "" {
		return PubAck{}, fmt.Errorf("%w: publish ack %q names no stream", ErrProtocol, m.Data)
	}
	return ack.PubAck, nil
}
