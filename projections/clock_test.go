package projections_test

import (
	"sync"
	"time"
)

// syncClock is a settable clock for Options.Now.
type syncClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *syncClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func (c *syncClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
