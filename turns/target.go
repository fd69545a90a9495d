package turns

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/fleetd/fleetd/events"
)

// Kind says how a target is addressed.
type Kind string

// The three ways to address a turn.
const (
	// KindAgent: one agent by id ("w-claude-1"), a direct turn, queued on
	// fleet.agent.<id>.queued.
	KindAgent Kind = "agent"
	// KindRole: role:R, any agent of the role, queued on
	// fleet.role.<R>.queued until the router assigns it.
	KindRole Kind = "role"
	// KindSession: session:S, the agent the orchestrator's named session S
	// is bound to. It is resolved to that agent (spawned or resumed first)
	// before anything is queued: Queue refuses it.
	KindSession Kind = "session"
)

// Target is a parsed "to": who a turn is for.
type Target struct {
	Kind Kind
	// Name is the agent id, the role or the session name.
	Name string
}

// String is the target in its "to" form: the agent id, role:R or
// session:S, so ParseTarget(t.String()) is t.
func (t Target) String() string {
	if t.Kind == KindAgent {
		return t.Name
	}
	return string(t.Kind) + ":" + t.Name
}

// ParseTarget reads a "to": "<agent>", "role:R" or "session:S". The one
// parser of targets, for the lead shim, the orchestrator's plans and
// senders alike. A bad one is a *TargetError (ErrInvalidTarget).
func ParseTarget(to string) (Target, error) {
	if to == "" {
		return Target{}, &TargetError{To: to, Err: ErrNoTarget}
	}
	kind, name, ok := strings.Cut(to, ":")
	if !ok {
		kind, name = string(KindAgent), to
	}
	t := Target{Kind: Kind(kind), Name: name}
	var err error
	switch t.Kind {
	case KindAgent:
		err = events.ValidAgentID(name)
	case KindRole:
		err = events.ValidRole(name)
	case KindSession:
		err = ValidSession(name)
	default:
		t.Kind, err = "", fmt.Errorf("unknown kind %q: want an agent id, role:R or session:S", kind)
	}
	if err != nil {
		return Target{}, &TargetError{To: to, Kind: t.Kind, Err: err}
	}
	return t, nil
}

// sessionRE leaves room in a session name for the -<n> incarnation suffix
// of the agent ids that serve it.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var sessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,55}$`) })

// ValidSession checks a session name: an agent id short enough that
// "<name>-<n>" is one too, because session S is served by agents S-1,
// S-2, … (one per incarnation).
func ValidSession(name string) error {
	if !sessionRE().MatchString(name) {
		return fmt.Errorf("session name %q must match %s", name, sessionRE())
	}
	return nil
}

// errSession is why Queue refuses a session target.
var errSession = errors.New("a turn is queued for an agent or role:R; resolve the session to its agent first")
