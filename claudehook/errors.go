package claudehook

import "errors"

var (
	// ErrNoAgent means FLEET_AGENT_ID is not set: the hook runs outside a
	// fleetd pane and does nothing.
	ErrNoAgent = errors.New("claudehook: FLEET_AGENT_ID is not set (not a fleetd pane); nothing to do")
	// ErrUnknownHook means the hook event name is not one fleetd handles.
	ErrUnknownHook = errors.New("claudehook: unknown hook event")
	// ErrPayload means the hook's stdin was not a Claude Code hook payload.
	ErrPayload = errors.New("claudehook: malformed hook payload")
	// ErrSpool means events could neither be appended nor spooled: they
	// are lost.
	ErrSpool = errors.New("claudehook: cannot spool events")
)
