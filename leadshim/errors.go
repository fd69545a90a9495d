package leadshim

import "errors"

var (
	// ErrInsecure means the shim was asked to listen beyond loopback
	// without a bearer token: DESIGN.md requires one on any other address.
	ErrInsecure = errors.New("leadshim: a non-loopback address needs a bearer token")
	// ErrConfig means the shim's Config is incomplete or invalid.
	ErrConfig = errors.New("leadshim: invalid config")
)
