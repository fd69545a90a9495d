package restart

import (
	"context"
	"fmt"
	"time"
)

// The waits between runs: first after a failure, doubling up to most; a
// run that lasted over fresh was working, so its failure starts the
// waits over.
const (
	first = time.Second
	most  = 30 * time.Second
	fresh = time.Minute
)

// Loop calls run until ctx ends, and again each time it returns, after a
// wait that doubles from 1 s to 30 s while runs keep failing. run's
// return is a failure whatever it is (a long-lived loop has no reason to
// end but ctx): warn is told of it, with the wait that follows, when its
// message differs from the last one told (a lost stream fails every
// attempt the same way until it is back). A run that lasted over a minute
// starts the waits and the warnings over: it is a new trouble. Loop
// returns once ctx has ended.
func Loop(ctx context.Context, run func(context.Context) error, warn func(err error, wait time.Duration)) {
	wait, last := first, ""
	for ctx.Err() == nil {
		began := time.Now()
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > fresh {
			wait, last = first, ""
		}
		if msg := fmt.Sprint(err); msg != last {
			warn(err, wait)
			last = msg
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}
