package leadshim

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// maxThrottled bounds the clients the failure throttle remembers; past
// it, clients whose allowance has refilled are forgotten first, and
// then new clients share one allowance (a guesser with many addresses
// gains nothing by having them).
const maxThrottled = 4096

// failThrottle slows wrong tokens per client: a token bucket per remote
// address (an IPv6 client's /64, which one host usually holds whole),
// of burst failures refilled one per every. While a client's bucket is
// empty, every request of it that presents a token is refused before
// the token is compared — the right one too, or a guesser would learn
// it by the answer. Requests that present none never count.
type failThrottle struct {
	burst float64
	every time.Duration

	mu      sync.Mutex
	clients map[string]*failBucket
}

type failBucket struct {
	tokens float64
	at     time.Time
}

func newFailThrottle(burst int, every time.Duration) *failThrottle {
	return &failThrottle{burst: float64(burst), every: every, clients: map[string]*failBucket{}}
}

// clientKey is the throttle's key for a request: its remote address, or
// the /64 of an IPv6 one. No forwarded header is believed: any client
// could send one.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// refill brings b up to now; the caller holds mu.
func (t *failThrottle) refill(b *failBucket, now time.Time) {
	if now.After(b.at) {
		b.tokens = min(t.burst, b.tokens+float64(now.Sub(b.at))/float64(t.every))
	}
	b.at = now
}

// wait is how long client must wait before its next try counts: zero
// when it may try now.
func (t *failThrottle) wait(client string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.clients[client]
	if !ok {
		if b, ok = t.clients[""]; !ok || len(t.clients) < maxThrottled {
			return 0
		}
		// An unknown client while the table is full may be one the
		// shared allowance stands for.
	}
	t.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(t.every))
}

// failed takes one failure from client's allowance.
func (t *failThrottle) failed(client string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.clients[client]
	if !ok {
		if len(t.clients) >= maxThrottled {
			t.forgetRefilled(now)
		}
		if len(t.clients) >= maxThrottled {
			client = ""
		}
		if b, ok = t.clients[client]; !ok {
			b = &failBucket{tokens: t.burst, at: now}
			t.clients[client] = b
		}
	}
	t.refill(b, now)
	b.tokens--
}

// forgetRefilled drops the clients whose allowance is whole again: they
// are as if never seen. The caller holds mu.
func (t *failThrottle) forgetRefilled(now time.Time) {
	for k, b := range t.clients {
		if t.refill(b, now); b.tokens >= t.burst {
			delete(t.clients, k)
		}
	}
}
