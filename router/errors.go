package router

import "errors"

var (
	// ErrConfig means the router's Config is incomplete.
	ErrConfig = errors.New("router: invalid config")
	// errStale means the chosen agent moved on after the views were read;
	// the worker re-reads and decides again.
	errStale = errors.New("router: agent changed since the views were read")
)
