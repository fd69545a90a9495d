package inbox

import "errors"

var (
	// ErrConfig means the Config is incomplete or wrong.
	ErrConfig = errors.New("inbox: bad config")
	// ErrBadMessage means a message cannot be posted as it is: no text,
	// a bad recipient or sender, or a text over the log's limit.
	ErrBadMessage = errors.New("inbox: bad message")
)
