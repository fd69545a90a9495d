package inbox

import "errors"

var (
	// ErrConfig means the Config is incomplete or wrong.
	ErrConfig = errors.New("inbox: bad config")
	// ErrBadMessage means a message cannot be posted as it is: no text,
	// a bad recipient or sender, or a text over the log's limit.
	ErrBadMessage = errors.New("inbox: bad message")
	// ErrNoInbox means the agent's inbox is not open: never opened, or
	// reclaimed after InactiveThreshold without a reader. Its messages
	// are in the log still; Open makes it again.
	ErrNoInbox = errors.New("inbox: not open")
	// ErrTooManyInboxes means FLEET holds so many consumers that a new
	// inbox would eat into what fleetd's readers need (see Open).
	ErrTooManyInboxes = errors.New("inbox: too many consumers on the stream to open another inbox")
)
