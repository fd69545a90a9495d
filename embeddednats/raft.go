package embeddednats

import (
	"sync"
	"time"
	_ "unsafe" // go:linkname, to reach nats-server's raft timing

	_ "github.com/nats-io/nats-server/v2/server" // the variables below live there
)

// The raft timing of nats-server, which it does not expose as options.
// Its defaults (a heartbeat each second, an election after 4–9 s without
// one) are for clusters across machines and data centres; when a member
// dies without a word (kill -9, a host lost), every stream, bucket and
// consumer it led stands still until the survivors elect, and fleetd's
// role dispatch with them — the cluster test measured 8–14 s, where a
// turn must be assigned on the survivors within 3 s (issue 37). fleetd's
// clusters are a few hosts close together: heartbeats every 200 ms and an
// election after 0.75–1.5 s of silence put a new leader in place ~2 s
// after a death, and a member is still allowed over half a second of
// stall (a loaded machine, a slow disk) before an election it did not
// need — which raft makes safe, only a little slower.
//
//go:linkname raftHeartbeat github.com/nats-io/nats-server/v2/server.hbInterval
var raftHeartbeat time.Duration

//go:linkname raftMinElection github.com/nats-io/nats-server/v2/server.minElectionTimeout
var raftMinElection time.Duration

//go:linkname raftMaxElection github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var raftMaxElection time.Duration

var raftTimingOnce sync.Once

// setRaftTiming sets the timing once per process, before the first server
// starts (the servers read it as they run, so it must not change after).
func setRaftTiming() {
	raftTimingOnce.Do(func() {
		raftHeartbeat = 200 * time.Millisecond
		raftMinElection = 750 * time.Millisecond
		raftMaxElection = 1500 * time.Millisecond
		// How long a leader that hears from no quorum goes on before it
		// steps down stays nats-server's 10 s: a dead leader is replaced
		// by the followers' election above, which this does not touch,
		// and a leader starved of a core for a few seconds (a loaded
		// machine) must not step down and set off elections for every
		// stream and consumer (two seconds did: stream creation timed out
		// in the cluster tests under load).
	})
}
