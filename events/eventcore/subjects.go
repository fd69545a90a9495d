package eventcore

import (
	"errors"
	"fmt"
	"strings"
)

// Stream is the one stream that holds the whole fabric.
const Stream = "FLEET"

// SubjectAll is every fleet subject: `nats sub 'fleet.>'` taps the fabric.
const SubjectAll = "fleet.>"

// Category is the aggregate kind a subject's second token names.
type Category string

// The aggregate categories of DESIGN.md's subject table.
const (
	CategoryAgent Category = "agent"
	CategoryRole  Category = "role"
	CategoryHost  Category = "host"
	CategoryJob   Category = "job"
)

// The token patterns, as errors and docs spell them. Agent and role ids
// are lower-case NATS tokens (DESIGN.md, Words); host names and job ids
// may carry upper case (ULIDs, host names). token matches them by hand:
// every decoded event checks its subject, and a regexp there was a fifth
// of decoding.
const (
	agentRE = `^[a-z0-9][a-z0-9_-]{0,62}$`
	tokenRE = `^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`
)

// token reports whether s matches agentRE (upper false) or tokenRE.
func token(s string, upper bool) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case upper && c >= 'A' && c <= 'Z':
		case i > 0 && (c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidAgentID reports whether id can name an agent (and be a subject token).
func ValidAgentID(id string) error {
	if !token(id, false) {
		return fmt.Errorf("%w: agent id %q must match %s", ErrInvalidToken, id, agentRE)
	}
	return nil
}

// ValidRole reports whether r can name a role.
func ValidRole(r string) error {
	if !token(r, false) {
		return fmt.Errorf("%w: role %q must match %s", ErrInvalidToken, r, agentRE)
	}
	return nil
}

// ValidToken reports whether id can be a host or job token.
func ValidToken(id string) error {
	if !token(id, true) {
		return fmt.Errorf("%w: %q must match %s", ErrInvalidToken, id, tokenRE)
	}
	return nil
}

// HostToken turns a host name into a valid host token (dots and other
// separators become dashes), so `fleetd up` can default to the host name.
func HostToken(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-_")
	if len(s) > 63 {
		s = s[:63]
	}
	if s == "" {
		return "host"
	}
	return s
}

func validFor(c Category, id string) error {
	switch c {
	case CategoryAgent:
		return ValidAgentID(id)
	case CategoryRole:
		return ValidRole(id)
	default:
		return ValidToken(id)
	}
}

// Subject builds fleet.<category>.<id>.<kind>, validating id.
func Subject(c Category, id, kind string) (string, error) {
	if err := validFor(c, id); err != nil {
		return "", err
	}
	return "fleet." + string(c) + "." + id + "." + kind, nil
}

// AgentSubject is fleet.agent.<id>.<kind>.
func AgentSubject(id, kind string) (string, error) { return Subject(CategoryAgent, id, kind) }

// AgentAll is fleet.agent.<id>.>: every event of one agent aggregate, the
// filter for its expected-sequence guard and for reading its history.
func AgentAll(id string) (string, error) { return Subject(CategoryAgent, id, ">") }

// RoleSubject is fleet.role.<role>.<kind>.
func RoleSubject(role, kind string) (string, error) { return Subject(CategoryRole, role, kind) }

// HostSubject is fleet.host.<host>.<kind>.
func HostSubject(host, kind string) (string, error) { return Subject(CategoryHost, host, kind) }

// JobSubject is fleet.job.<job>.<kind>.
func JobSubject(job, kind string) (string, error) { return Subject(CategoryJob, job, kind) }

// ParseSubject splits a fleet subject into its category, aggregate id and kind.
func ParseSubject(subject string) (c Category, id, kind string, err error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 4 || parts[0] != "fleet" {
		return "", "", "", fmt.Errorf("%w: subject %q is not fleet.<category>.<id>.<kind>", ErrMalformed, subject)
	}
	return Category(parts[1]), parts[2], parts[3], nil
}

// ValidFilter checks a subject filter for the FLEET stream, as readers
// take them from people (the shim's /events, the dashboard's log view):
// fleet. followed by one or more tokens, each a run of visible characters
// other than '.', '*' and '>', or exactly '*', or exactly '>' as the last.
func ValidFilter(subj string) error {
	if len(subj) > 256 {
		return errors.New("longer than 256 bytes")
	}
	toks := strings.Split(subj, ".")
	if len(toks) < 2 || toks[0] != "fleet" {
		return errors.New("not under fleet.> (want e.g. fleet.agent.w-1.> or fleet.*.*.replied)")
	}
	for i, t := range toks[1:] {
		switch {
		case t == "":
			return errors.New("an empty token")
		case t == ">" && i != len(toks)-2:
			return errors.New("'>' is only allowed as the last token")
		case t == "*" || t == ">":
		case strings.ContainsAny(t, "*>"):
			return fmt.Errorf("token %q: a wildcard must be a whole token", t)
		case strings.IndexFunc(t, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			return fmt.Errorf("token %q has a space or control character", t)
		}
	}
	return nil
}
