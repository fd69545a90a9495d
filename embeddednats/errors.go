package embeddednats

import "errors"

// ErrUnauthenticated means the server would accept connections from other
// machines without authenticating them: a client listener off loopback
// with no token or users, or cluster routes off loopback with no route
// authorization. Start refuses to run such a server (the error says which
// listener).
var ErrUnauthenticated = errors.New("listener reachable from other machines without authentication")
