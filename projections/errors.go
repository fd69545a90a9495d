package projections

import "errors"

var (
	// ErrRunning means Run or Rebuild was called while the projector is
	// already folding: one projector has one fold loop.
	ErrRunning = errors.New("projections: already running")
	// ErrClosed means the projector was closed and cannot run again.
	ErrClosed = errors.New("projections: closed")
	// ErrInvalidOptions means Options failed validation; the wrapped errors
	// name every problem.
	ErrInvalidOptions = errors.New("projections: invalid options")
	// ErrTrimmed means Rebuild cannot work: the log's beginning was trimmed
	// (retention) and no checkpoint of this stream covers what is gone, so
	// folding what is left would lose state.
	ErrTrimmed = errors.New("projections: the log was trimmed past every checkpoint")
)
