package dashboard

import "errors"

var (
	// ErrConfig means Config failed validation; the wrapped errors name
	// every problem.
	ErrConfig = errors.New("dashboard: invalid config")
	// ErrBadPoint means a point in the log (?at=, --at) could not be read.
	ErrBadPoint = errors.New("dashboard: not a point in the log")
	// ErrBusy means Config.MaxFolds folds of the past were running and
	// none ended within Config.FoldWait: the request is refused (429).
	ErrBusy = errors.New("dashboard: too many folds of the past at once")
	// ErrFoldTimeout means a fold of the past took longer than
	// Config.FoldTimeout.
	ErrFoldTimeout = errors.New("dashboard: the fold of the past took too long")
)
