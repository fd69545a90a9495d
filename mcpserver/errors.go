package mcpserver

import "errors"

// ErrConfig means the server's Config is incomplete or wrong.
var ErrConfig = errors.New("mcpserver: bad config")
