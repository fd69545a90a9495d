package eventcore

import (
	"errors"
	"fmt"
)

// ErrSessionID means a session id is in neither Claude Code's format nor
// OpenCode's.
var ErrSessionID = errors.New("not a Claude Code session id")

// ValidSessionID reports whether id has the shape of a Claude Code
// session id: a UUID in its canonical form (8-4-4-4-12 hex digits), which
// Codex, Gemini CLI and Pi use too, or OpenCode's ("ses_" and 26 ASCII
// letters and digits, opencode -s <id>). The
// id comes from the agent's own hooks, so from inside its sandbox, and a
// restart or a resumed session passes it to the launch (--resume <id>):
// anything else — a control character that a line editor acts on, a
// quote, a space — is refused where it is reported and where it is used.
func ValidSessionID(id string) error {
	if validOpenCodeSessionID(id) {
		return nil
	}
	if len(id) != 36 {
		return fmt.Errorf("%w (a UUID, or OpenCode's ses_…): %q", ErrSessionID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return fmt.Errorf("%w (a UUID, or OpenCode's ses_…): %q", ErrSessionID, id)
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return fmt.Errorf("%w (a UUID, or OpenCode's ses_…): %q", ErrSessionID, id)
			}
		}
	}
	return nil
}

// validOpenCodeSessionID reports whether id is an OpenCode 1.18 session
// id: "ses_", 12 hex digits of time and 14 base62 random characters
// ("ses_dc293dbceffeDlWRXugk2lL97T").
func validOpenCodeSessionID(id string) bool {
	const prefix = "ses_"
	if len(id) != len(prefix)+26 || id[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
