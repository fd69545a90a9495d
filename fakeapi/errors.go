package fakeapi

import "errors"

var (
	// ErrClosed is returned by Serve and Start once the server has been closed.
	ErrClosed = errors.New("fakeapi: server closed")
	// ErrStarted is returned by Serve and Start when the server already serves.
	ErrStarted = errors.New("fakeapi: server already started")
)
