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
			t := time.NewTimer(retryWait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return PubAck{}, fmt.Errorf("%w (until %w)", err, ctx.Err())
			}
		}
		if err != nil {
			return PubAck{}, err
		}
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
}
