package orchestrator

import (
	"crypto/sha256"
	"time"

	"github.com/oklog/ulid/v2"
)

// derivedID is a ULID fixed by (base, purpose): an event the orchestrator
// may append again after a crash (a rollup, a task's end) gets the same id
// every time, so JetStream's dedupe makes the retry a no-op. The time part
// is base's when base is a ULID, else the epoch (still a valid ULID).
func derivedID(base, purpose string) string {
	ts := time.UnixMilli(0)
	if u, err := ulid.ParseStrict(base); err == nil {
		ts = ulid.Time(u.Time())
	}
	h := sha256.Sum256([]byte(base + "/" + purpose))
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(ts))
	_ = id.SetEntropy(h[:10])
	return id.String()
}
