package eventcore

import (
	"errors"
	"fmt"
)

// ErrSessionID means a Claude Code session id is not in Claude Code's
// format.
var ErrSessionID = errors.New("not a Claude Code session id")

// ValidSessionID reports whether id has the shape of a Claude Code
// session id: a UUID in its canonical form (8-4-4-4-12 hex digits). The
// id comes from the agent's own hooks, so from inside its sandbox, and a
// restart or a resumed session passes it to the launch (--resume <id>):
// anything else — a control character that a line editor acts on, a
// quote, a space — is refused where it is reported and where it is used.
func ValidSessionID(id string) error {
	if len(id) != 36 {
		return fmt.Errorf("%w (a UUID): %q", ErrSessionID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return fmt.Errorf("%w (a UUID): %q", ErrSessionID, id)
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return fmt.Errorf("%w (a UUID): %q", ErrSessionID, id)
			}
		}
	}
	return nil
}
