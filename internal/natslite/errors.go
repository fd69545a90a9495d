package natslite

import (
	"errors"
	"fmt"
)

var (
	// ErrTLS means the server (or the URL's scheme) asks for TLS, which
	// natslite does not speak.
	ErrTLS = errors.New("natslite: the server wants TLS")
	// ErrNoResponders means no one listens on a request's subject (NATS
	// status 503): for a JetStream publish, no stream has a leader to
	// answer yet.
	ErrNoResponders = errors.New("natslite: no responders")
	// ErrServer means the server sent -ERR: an authentication failure, a
	// permissions violation, a malformed request.
	ErrServer = errors.New("natslite: server error")
	// ErrProtocol means the server sent something natslite cannot read.
	ErrProtocol = errors.New("natslite: protocol error")
)

// APIError is a JetStream API error carried in a reply: Code is the HTTP
// like status, ErrorCode JetStream's own (10071: wrong last sequence).
type APIError struct {
	Code        int    `json:"code"`
	ErrorCode   int    `json:"err_code"`
	Description string `json:"description"`
}

// Error says what JetStream said, as nats.go's APIError does.
func (e *APIError) Error() string {
	return fmt.Sprintf("nats: API error: code=%d err_code=%d description=%s", e.Code, e.ErrorCode, e.Description)
}
