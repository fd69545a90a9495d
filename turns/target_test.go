package turns_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/turns"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   string
		want turns.Target
	}{
		{"an agent id is a direct target", "w-claude-1", turns.Target{Kind: turns.KindAgent, Name: "w-claude-1"}},
		{"role:R is a role target", "role:w-local", turns.Target{Kind: turns.KindRole, Name: "w-local"}},
		{"session:S is a session target", "session:main-a", turns.Target{Kind: turns.KindSession, Name: "main-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := turns.ParseTarget(tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.to {
				t.Errorf("String() = %q, want %q", got.String(), tc.to)
			}
		})
	}
}

func TestParseTargetRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		to       string
		kind     turns.Kind // what the TargetError says it was read as
		sentinel error      // beside ErrInvalidTarget; nil: none
		contains string
	}{
		{"an empty to is no target", "", "", turns.ErrNoTarget, "no target"},
		{"an agent id with capitals is a bad agent", "W", turns.KindAgent, nil, `"W"`},
		{"an agent id with a space is a bad agent", "W 1", turns.KindAgent, nil, ""},
		{"an agent id with a dot is a bad agent", "fleet.x", turns.KindAgent, nil, ""},
		{"role: without a name is a bad role", "role:", turns.KindRole, nil, ""},
		{"a role with punctuation is a bad role", "role:W!", turns.KindRole, nil, `role "W!"`},
		{"a session with capitals is a bad session", "session:Main", turns.KindSession, nil, "session name"},
		{"a session name too long for its incarnations is a bad session", "session:" + strings.Repeat("s", 57), turns.KindSession, nil, "session name"},
		{"an unknown prefix is no kind", "bogus:x", "", nil, `unknown kind "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := turns.ParseTarget(tc.to)
			if !errors.Is(err, turns.ErrInvalidTarget) {
				t.Fatalf("err = %v, want ErrInvalidTarget", err)
			}
			te, ok := errors.AsType[*turns.TargetError](err)
			if !ok {
				t.Fatalf("err = %T, want *TargetError", err)
			}
			if te.Kind != tc.kind || te.To != tc.to {
				t.Errorf("TargetError kind %q to %q, want %q %q", te.Kind, te.To, tc.kind, tc.to)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("err = %v, want %v too", err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %q, want it to say %q", err, tc.contains)
			}
		})
	}
}

func TestValidSession(t *testing.T) {
	for _, tc := range []struct {
		name, session string
		ok            bool
	}{
		{"a short lower-case name is valid", "main-a", true},
		{"56 characters leave room for -<n>", strings.Repeat("s", 56), true},
		{"57 characters are too long", strings.Repeat("s", 57), false},
		{"a leading dash is invalid", "-a", false},
		{"empty is invalid", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := turns.ValidSession(tc.session); (err == nil) != tc.ok {
				t.Errorf("ValidSession(%q) = %v, want ok %t", tc.session, err, tc.ok)
			}
		})
	}
}
