package fleettest

import (
	"sync"
	"time"
)

// Clock is a settable clock for a component's Now: the test sets it
// while the component's goroutines read it. The zero Clock reads the
// zero time.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock that reads t until it is set.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Set makes the clock read t.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Now reads the clock.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
