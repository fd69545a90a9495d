//go:build !linux

package bench

import (
	"errors"
	"time"
)

// markWatch needs Linux's inotify: elsewhere the floor rows are not run.
type markWatch struct{}

func watchMarks(string) (*markWatch, error) {
	return nil, errors.New("the agent floor watches its Stop hook's mark with inotify, which only Linux has")
}

func (*markWatch) marks(string) chan time.Time { return nil }

func (*markWatch) Close() error { return nil }
