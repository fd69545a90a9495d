package dashboard

import "errors"

var (
	// ErrConfig means Config failed validation; the wrapped errors name
	// every problem.
	ErrConfig = errors.New("dashboard: invalid config")
	// ErrBadPoint means a point in the log (?at=, --at) could not be read.
	ErrBadPoint = errors.New("dashboard: not a point in the log")
)
