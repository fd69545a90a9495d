package eventcore

import (
	"encoding/json"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Registry knows how to decode each event type's data. It is a value built
// once (NewRegistry) and passed to whoever reads the log; there is no
// package-level registry.
type Registry struct {
	decoders map[Type]func(json.RawMessage) (Data, error)
	limits   Limits
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithLimits bounds event string fields by l instead of DefaultLimits;
// zero fields keep their default. A host that takes turn texts over 1 MiB
// raises Text, on every host that reads them.
func WithLimits(l Limits) RegistryOption {
	return func(r *Registry) {
		l.setDefaults()
		r.limits = l
	}
}

// validator is implemented by data types with rules beyond their JSON shape.
type validator interface{ validate() error }

// Register adds (or replaces) the decoder of T's event type in r.
func Register[T Data](r *Registry) {
	var zero T
	r.decoders[zero.EventType()] = func(raw json.RawMessage) (Data, error) {
		var v T
		if err := jsonv2.Unmarshal(raw, &v, jsonv1.DefaultOptionsV1()); err != nil {
			return nil, err
		}
		if val, ok := any(v).(validator); ok {
			if err := val.validate(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

// NewRegistry returns a registry of every event type in DESIGN.md, with
// DefaultLimits on string fields unless WithLimits says otherwise.
func NewRegistry(opts ...RegistryOption) *Registry {
	r := &Registry{decoders: make(map[Type]func(json.RawMessage) (Data, error)), limits: DefaultLimits()}
	for _, o := range opts {
		o(r)
	}
	Register[AgentRegistered](r)
	Register[AgentStatusChanged](r)
	Register[AgentQueued](r)
	Register[AgentTyped](r)
	Register[AgentSubmitted](r)
	Register[AgentReplied](r)
	Register[AgentUsage](r)
	Register[AgentFailed](r)
	Register[AgentSession](r)
	Register[AgentExited](r)
	Register[AgentDeferred](r)
	Register[AgentAttention](r)
	Register[AgentDialog](r)
	Register[AgentAnswer](r)
	Register[AgentReleased](r)
	Register[AgentRestart](r)
	Register[AgentInbox](r)
	Register[AgentInboxRead](r)
	Register[RoleQueued](r)
	Register[RoleCancelled](r)
	Register[AgentBudgetWarning](r)
	Register[RoleBudgetWarning](r)
	Register[HostUp](r)
	Register[HostDown](r)
	Register[HostHerdr](r)
	Register[JobCreated](r)
	Register[JobContext](r)
	Register[JobSliced](r)
	Register[JobTask](r)
	Register[JobDone](r)
	return r
}

// Limits are the bounds Decode and Append hold event string fields to.
func (r *Registry) Limits() Limits { return r.limits }

// Check reports whether ev's string fields are within the registry's
// limits (ErrTooLarge otherwise).
func (r *Registry) Check(ev Event) error { return r.limits.check(ev) }

// Types lists the registered types.
func (r *Registry) Types() []Type {
	out := make([]Type, 0, len(r.decoders))
	for t := range r.decoders {
		out = append(out, t)
	}
	return out
}

func (r *Registry) decodeData(t Type, raw json.RawMessage) (Data, error) {
	dec, ok := r.decoders[t]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, t)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: %s data is not a JSON object", ErrMalformed, t)
	}
	if d, ok := readData(t, raw); ok {
		if _, check := d.(validator); !check {
			return d, nil
		}
		// One with checks of its own takes the general way, which runs them.
	}
	d, err := dec(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s data: %v", ErrMalformed, t, err)
	}
	return d, nil
}

func (d AgentStatusChanged) validate() error {
	if !d.Status.Valid() {
		return fmt.Errorf("unknown status %q", d.Status)
	}
	return nil
}

func (d AgentDialog) validate() error {
	switch d.State {
	case DialogOpen, DialogAnswered, DialogUnanswered, DialogClosed:
		return nil
	}
	return fmt.Errorf("unknown dialog state %q", d.State)
}

func (d AgentAnswer) validate() error {
	if d.Option < 1 {
		return fmt.Errorf("answer option %d: options count from 1", d.Option)
	}
	return nil
}

func (d AgentRegistered) validate() error { return ValidAgentID(d.Agent) }

func (d AgentFailed) validate() error {
	if d.Reason == "" {
		return fmt.Errorf("failed without a reason")
	}
	return nil
}
