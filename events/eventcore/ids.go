package eventcore

import (
	"bytes"
	"crypto/sha256"

	"github.com/oklog/ulid/v2"
)

// DerivedID is the id of an event every writer of the same step must
// write alike — a router's assignment, a notifier's message, a host's
// budget warning — so that a retry, or a second host doing the same, is
// stored once by JetStream's dedupe: a ULID whose time is at
// (milliseconds since the epoch) and whose entropy is a hash of key,
// which names the step. The formula is part of the log: a changed one
// would let writers of two versions store the same step twice.
func DerivedID(at uint64, key string) string {
	h := sha256.Sum256([]byte(key))
	return ulid.MustNew(at, bytes.NewReader(h[:])).String()
}

// DerivedIDFrom is DerivedID at the time of parent, a ULID (the turn the
// step is of), or at 0 when parent is not one.
func DerivedIDFrom(parent, key string) string {
	var at uint64
	if u, err := ulid.ParseStrict(parent); err == nil {
		at = u.Time()
	}
	return DerivedID(at, key)
}
