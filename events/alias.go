package events

// The pure half of events lives in events/eventcore (types, envelope,
// registry, subjects, ids), which imports no NATS client, so that the hook
// binary can link it alone; events names all of it again, so its users
// need not know.

import (
	"time"

	"github.com/fleetd/fleetd/events/eventcore"
)

// Ack is eventcore.Ack.
type Ack = eventcore.Ack

// AgentAttention is eventcore.AgentAttention.
type AgentAttention = eventcore.AgentAttention

// AgentBudgetWarning is eventcore.AgentBudgetWarning.
type AgentBudgetWarning = eventcore.AgentBudgetWarning

// AgentDeferred is eventcore.AgentDeferred.
type AgentDeferred = eventcore.AgentDeferred

// AgentExited is eventcore.AgentExited.
type AgentExited = eventcore.AgentExited

// AgentFailed is eventcore.AgentFailed.
type AgentFailed = eventcore.AgentFailed

// AgentInbox is eventcore.AgentInbox.
type AgentInbox = eventcore.AgentInbox

// AgentInboxRead is eventcore.AgentInboxRead.
type AgentInboxRead = eventcore.AgentInboxRead

// AgentQueued is eventcore.AgentQueued.
type AgentQueued = eventcore.AgentQueued

// AgentRegistered is eventcore.AgentRegistered.
type AgentRegistered = eventcore.AgentRegistered

// AgentReleased is eventcore.AgentReleased.
type AgentReleased = eventcore.AgentReleased

// AgentReplied is eventcore.AgentReplied.
type AgentReplied = eventcore.AgentReplied

// AgentDialog is eventcore.AgentDialog.
type AgentDialog = eventcore.AgentDialog

// AgentAnswer is eventcore.AgentAnswer.
type AgentAnswer = eventcore.AgentAnswer

// AgentUsage is eventcore.AgentUsage.
type AgentUsage = eventcore.AgentUsage

// AgentRestart is eventcore.AgentRestart.
type AgentRestart = eventcore.AgentRestart

// AgentSession is eventcore.AgentSession.
type AgentSession = eventcore.AgentSession

// AgentStatusChanged is eventcore.AgentStatusChanged.
type AgentStatusChanged = eventcore.AgentStatusChanged

// AgentSubmitted is eventcore.AgentSubmitted.
type AgentSubmitted = eventcore.AgentSubmitted

// AgentTyped is eventcore.AgentTyped.
type AgentTyped = eventcore.AgentTyped

// AppendOption is eventcore.AppendOption.
type AppendOption = eventcore.AppendOption

// BudgetWarning is eventcore.BudgetWarning.
type BudgetWarning = eventcore.BudgetWarning

// Category is eventcore.Category.
type Category = eventcore.Category

// Data is eventcore.Data.
type Data = eventcore.Data

// Event is eventcore.Event.
type Event = eventcore.Event

// HostDown is eventcore.HostDown.
type HostDown = eventcore.HostDown

// HostHerdr is eventcore.HostHerdr.
type HostHerdr = eventcore.HostHerdr

// HostUp is eventcore.HostUp.
type HostUp = eventcore.HostUp

// JobContext is eventcore.JobContext.
type JobContext = eventcore.JobContext

// JobCreated is eventcore.JobCreated.
type JobCreated = eventcore.JobCreated

// JobDone is eventcore.JobDone.
type JobDone = eventcore.JobDone

// JobSliced is eventcore.JobSliced.
type JobSliced = eventcore.JobSliced

// JobTask is eventcore.JobTask.
type JobTask = eventcore.JobTask

// Limits is eventcore.Limits.
type Limits = eventcore.Limits

// Normalization is eventcore.Normalization.
type Normalization = eventcore.Normalization

// Query is eventcore.Query.
type Query = eventcore.Query

// Registry is eventcore.Registry.
type Registry = eventcore.Registry

// RegistryOption is eventcore.RegistryOption.
type RegistryOption = eventcore.RegistryOption

// RoleBudgetWarning is eventcore.RoleBudgetWarning.
type RoleBudgetWarning = eventcore.RoleBudgetWarning

// RoleQueued is eventcore.RoleQueued.
type RoleQueued = eventcore.RoleQueued

// RoleCancelled is eventcore.RoleCancelled.
type RoleCancelled = eventcore.RoleCancelled

// Status is eventcore.Status.
type Status = eventcore.Status

// TaskSpecBrief is eventcore.TaskSpecBrief.
type TaskSpecBrief = eventcore.TaskSpecBrief

// Tokens is eventcore.Tokens.
type Tokens = eventcore.Tokens

// Type is eventcore.Type.
type Type = eventcore.Type

// Worktree is eventcore.Worktree.
type Worktree = eventcore.Worktree

// The constants of eventcore: the stream, its subjects, event types,
// statuses and limits.
const (
	CategoryAgent        = eventcore.CategoryAgent
	CategoryHost         = eventcore.CategoryHost
	CategoryJob          = eventcore.CategoryJob
	CategoryRole         = eventcore.CategoryRole
	DefaultTextLimit     = eventcore.DefaultTextLimit
	ReasonAgentDied      = eventcore.ReasonAgentDied
	ReasonAgentExited    = eventcore.ReasonAgentExited
	ReasonBlocked        = eventcore.ReasonBlocked
	ReasonCancelled      = eventcore.ReasonCancelled
	ReasonDenied         = eventcore.ReasonDenied
	ReasonEmptyPrompt    = eventcore.ReasonEmptyPrompt
	ReasonHostStale      = eventcore.ReasonHostStale
	ReasonIndeterminate  = eventcore.ReasonIndeterminate
	ReasonNotReady       = eventcore.ReasonNotReady
	ReasonPaneExited     = eventcore.ReasonPaneExited
	ReasonTimeout        = eventcore.ReasonTimeout
	ReasonUnknownAgent   = eventcore.ReasonUnknownAgent
	ReasonUnmatchedReply = eventcore.ReasonUnmatchedReply
	RestartFailed        = eventcore.RestartFailed
	RestartGaveUp        = eventcore.RestartGaveUp
	RestartRestarted     = eventcore.RestartRestarted
	RestartRestarting    = eventcore.RestartRestarting
	SpecVersion          = eventcore.SpecVersion
	DialogAnswered       = eventcore.DialogAnswered
	DialogClosed         = eventcore.DialogClosed
	DialogOpen           = eventcore.DialogOpen
	DialogUnanswered     = eventcore.DialogUnanswered
	StatusBlocked        = eventcore.StatusBlocked
	StatusDone           = eventcore.StatusDone
	StatusIdle           = eventcore.StatusIdle
	StatusUnknown        = eventcore.StatusUnknown
	StatusWorking        = eventcore.StatusWorking
	Stream               = eventcore.Stream
	SubjectAll           = eventcore.SubjectAll
	TaskAssigned         = eventcore.TaskAssigned
	TaskFailed           = eventcore.TaskFailed
	TaskReplied          = eventcore.TaskReplied
	TaskSent             = eventcore.TaskSent
	TaskSkipped          = eventcore.TaskSkipped
	TurnKindNudge        = eventcore.TurnKindNudge
	TypeAgentAnswer      = eventcore.TypeAgentAnswer
	TypeAgentAttention   = eventcore.TypeAgentAttention
	TypeAgentBudget      = eventcore.TypeAgentBudget
	TypeAgentDeferred    = eventcore.TypeAgentDeferred
	TypeAgentDialog      = eventcore.TypeAgentDialog
	TypeAgentExited      = eventcore.TypeAgentExited
	TypeAgentFailed      = eventcore.TypeAgentFailed
	TypeAgentInbox       = eventcore.TypeAgentInbox
	TypeAgentInboxRead   = eventcore.TypeAgentInboxRead
	TypeAgentQueued      = eventcore.TypeAgentQueued
	TypeAgentRegistered  = eventcore.TypeAgentRegistered
	TypeAgentReleased    = eventcore.TypeAgentReleased
	TypeAgentReplied     = eventcore.TypeAgentReplied
	TypeAgentUsage       = eventcore.TypeAgentUsage
	TypeAgentRestart     = eventcore.TypeAgentRestart
	TypeAgentSession     = eventcore.TypeAgentSession
	TypeAgentStatus      = eventcore.TypeAgentStatus
	TypeAgentSubmitted   = eventcore.TypeAgentSubmitted
	TypeAgentTyped       = eventcore.TypeAgentTyped
	TypeHostDown         = eventcore.TypeHostDown
	TypeHostHerdr        = eventcore.TypeHostHerdr
	TypeHostUp           = eventcore.TypeHostUp
	TypeJobContext       = eventcore.TypeJobContext
	TypeJobCreated       = eventcore.TypeJobCreated
	TypeJobDone          = eventcore.TypeJobDone
	TypeJobSliced        = eventcore.TypeJobSliced
	TypeJobTask          = eventcore.TypeJobTask
	TypeRoleBudget       = eventcore.TypeRoleBudget
	TypeRoleQueued       = eventcore.TypeRoleQueued
	TypeRoleCancelled    = eventcore.TypeRoleCancelled
)

// The sentinel errors of eventcore.
var (
	ErrInvalidToken = eventcore.ErrInvalidToken
	ErrMalformed    = eventcore.ErrMalformed
	ErrSessionID    = eventcore.ErrSessionID
	ErrTooLarge     = eventcore.ErrTooLarge
	ErrUnknownType  = eventcore.ErrUnknownType
)

// AgentAll is eventcore.AgentAll.
func AgentAll(id string) (string, error) { return eventcore.AgentAll(id) }

// AgentSubject is eventcore.AgentSubject.
func AgentSubject(id, kind string) (string, error) { return eventcore.AgentSubject(id, kind) }

// DefaultLimits is eventcore.DefaultLimits.
func DefaultLimits() Limits { return eventcore.DefaultLimits() }

// DerivedID is eventcore.DerivedID.
func DerivedID(at uint64, key string) string { return eventcore.DerivedID(at, key) }

// DerivedIDFrom is eventcore.DerivedIDFrom.
func DerivedIDFrom(parent, key string) string { return eventcore.DerivedIDFrom(parent, key) }

// ExpectLastSeq is eventcore.ExpectLastSeq.
func ExpectLastSeq(seq uint64) AppendOption { return eventcore.ExpectLastSeq(seq) }

// ExpectLastSeqFor is eventcore.ExpectLastSeqFor.
func ExpectLastSeqFor(seq uint64, filter string) AppendOption {
	return eventcore.ExpectLastSeqFor(seq, filter)
}

// Expected is eventcore.Expected.
func Expected(opts ...AppendOption) (seq uint64, filter string, ok bool) {
	return eventcore.Expected(opts...)
}

// HostSubject is eventcore.HostSubject.
func HostSubject(host, kind string) (string, error) { return eventcore.HostSubject(host, kind) }

// HostToken is eventcore.HostToken.
func HostToken(name string) string { return eventcore.HostToken(name) }

// JobSubject is eventcore.JobSubject.
func JobSubject(job, kind string) (string, error) { return eventcore.JobSubject(job, kind) }

// NewRegistry is eventcore.NewRegistry.
func NewRegistry(opts ...RegistryOption) *Registry { return eventcore.NewRegistry(opts...) }

// NewULIDSource is eventcore.NewULIDSource.
func NewULIDSource(now func() time.Time) func() string { return eventcore.NewULIDSource(now) }

// ParseSubject is eventcore.ParseSubject.
func ParseSubject(subject string) (c Category, id, kind string, err error) {
	return eventcore.ParseSubject(subject)
}

// Register is eventcore.Register.
func Register[T Data](r *Registry) { eventcore.Register[T](r) }

// RoleSubject is eventcore.RoleSubject.
func RoleSubject(role, kind string) (string, error) { return eventcore.RoleSubject(role, kind) }

// Subject is eventcore.Subject.
func Subject(c Category, id, kind string) (string, error) { return eventcore.Subject(c, id, kind) }

// ValidAgentID is eventcore.ValidAgentID.
func ValidAgentID(id string) error { return eventcore.ValidAgentID(id) }

// ValidFilter is eventcore.ValidFilter.
func ValidFilter(subj string) error { return eventcore.ValidFilter(subj) }

// ValidRole is eventcore.ValidRole.
func ValidRole(r string) error { return eventcore.ValidRole(r) }

// ValidSessionID is eventcore.ValidSessionID.
func ValidSessionID(id string) error { return eventcore.ValidSessionID(id) }

// ValidToken is eventcore.ValidToken.
func ValidToken(id string) error { return eventcore.ValidToken(id) }

// WithLimits is eventcore.WithLimits.
func WithLimits(l Limits) RegistryOption { return eventcore.WithLimits(l) }
