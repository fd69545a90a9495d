package turns

import (
	"errors"
	"fmt"
	"time"
)

// The sentinel errors of turns; callers test them with errors.Is. The lead
// shim maps them to its HTTP answers (400, or 413 for ErrTooLarge), the
// orchestrator wraps them with the task or message they refused.
var (
	// ErrInvalidTarget: a "to" is not an agent id, role:R or session:S, or
	// names a session where only an agent or a role can be queued for.
	// Every *TargetError is one.
	ErrInvalidTarget = errors.New("invalid target")
	// ErrNoTarget: the "to" is empty. It comes as a *TargetError, so it is
	// an ErrInvalidTarget too.
	ErrNoTarget = errors.New(`no target: "to" is an agent id or role:<role>`)
	// ErrTextAndCommand: a turn carries both a text (a prompt) and a
	// command (a slash command); it types one or the other.
	ErrTextAndCommand = errors.New("both a text and a command")
	// ErrEmptyText: a turn has neither a text nor a command, or its text is
	// empty (or only white space) once lifecycle.Normalize removed what a
	// terminal would act on, so there is nothing to type.
	ErrEmptyText = errors.New("empty text")
	// ErrTooLarge: a turn's text is over the sender's MaxText, or too long
	// for its event to fit the NATS server's max_payload. Every *SizeError
	// is one.
	ErrTooLarge = errors.New("text too large")
	// ErrNoID: a turn to queue has no id; the sender makes it (a ULID) so
	// it can record or answer it before the turn is in the log.
	ErrNoID = errors.New("no turn id")
	// ErrNotReleasable: Release was asked for a turn that is not a role
	// turn assigned to an agent and still untyped, or Requeue for one that
	// was never released.
	ErrNotReleasable = errors.New("turn is not a released or releasable role turn")
	// ErrNotUnassigned: Cancellation was asked for a turn that is not a
	// role turn waiting in its role's queue (an agent has it, or it ended).
	ErrNotUnassigned = errors.New("turn is not an unassigned role turn")
	// ErrBudgetExhausted: the target of a turn is out of budget, so
	// nothing was queued. It comes as a *BudgetError.
	ErrBudgetExhausted = errors.New("budget_exhausted")
	// ErrNotRoleQueued: Assignment was given an event that is not a role's
	// queued turn.
	ErrNotRoleQueued = errors.New("not a role's queued turn")
)

// TargetError says why a "to" is not a target a turn can be queued for.
// It is ErrInvalidTarget for errors.Is, and unwraps to the reason.
type TargetError struct {
	// To is the target as given.
	To string
	// Kind is what To was read as: KindAgent without a prefix, KindRole or
	// KindSession with one, "" for an empty To or an unknown prefix. The
	// shim answers bad_role for KindRole, bad_agent otherwise.
	Kind Kind
	// Err is the reason (events.ValidRole's, ErrNoTarget, …).
	Err error
}

// Error says which target was refused and why.
func (e *TargetError) Error() string {
	return fmt.Sprintf("%v %q: %v", ErrInvalidTarget, e.To, e.Err)
}

// Is makes every TargetError an ErrInvalidTarget.
func (e *TargetError) Is(target error) bool { return target == ErrInvalidTarget }

// Unwrap returns the reason.
func (e *TargetError) Unwrap() error { return e.Err }

// SizeError says a text is too large to queue, and which limit it broke.
// It is ErrTooLarge for errors.Is.
type SizeError struct {
	// Bytes is the text's size once normalised.
	Bytes int
	// Limit is the largest text allowed: MaxText, or what MaxPayload
	// leaves for a text.
	Limit int
	// MaxPayload is the NATS server's max_payload when that is the limit
	// the text broke; 0 when it broke MaxText.
	MaxPayload int64
}

// Error says how large the text is and what it may be.
func (e *SizeError) Error() string {
	if e.MaxPayload > 0 {
		return fmt.Sprintf("the text is %d bytes; the NATS server takes messages up to %d bytes (max_payload), so texts up to about %d",
			e.Bytes, e.MaxPayload, e.Limit)
	}
	return fmt.Sprintf("the text is %d bytes; the limit is %d", e.Bytes, e.Limit)
}

// Is makes every SizeError an ErrTooLarge.
func (e *SizeError) Is(target error) bool { return target == ErrTooLarge }

// BudgetError says a turn was refused because its target is out of
// budget: which limit, and when it frees up. It is ErrBudgetExhausted for
// errors.Is.
type BudgetError struct {
	// Target is the agent or role the turn was for.
	Target Target
	// Limit says which budget and limit is spent, and how far ("role w
	// tokens_per_hour at 14300% (143 of 1)").
	Limit string
	// FreesAt is when a turn would be taken again; zero when unknown.
	FreesAt time.Time
}

// Error names the code, the target, the limit and when it frees up, so a
// job's task that records it says all of that.
func (e *BudgetError) Error() string {
	s := fmt.Sprintf("%v: %s is out of budget: %s", ErrBudgetExhausted, e.Who(), e.Limit)
	if !e.FreesAt.IsZero() {
		s += "; frees_at " + e.FreesAt.UTC().Format(time.RFC3339)
	}
	return s
}

// Who is the target as a refusal names it: "agent w-1", "role w".
func (e *BudgetError) Who() string { return string(e.Target.Kind) + " " + e.Target.Name }

// Is makes every BudgetError an ErrBudgetExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }
