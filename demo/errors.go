package demo

import "errors"

// ErrNoReply means some of the demo's turns ended without a reply (they
// failed, timed out, or the shim refused them); Run's error says how many.
var ErrNoReply = errors.New("turns did not reply")
