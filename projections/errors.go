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
)
