package natstest

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
)

// This package's TestMain does not call ServeMember: a member started
// from it must say so, not hang or pass for a served one.
func TestAMemberOfABinaryThatDoesNotServeThemSaysWhy(t *testing.T) {
	m, ready := startMember(t, embeddednats.Config{DataDir: t.TempDir(), ServerName: "lonely"})
	select {
	case err := <-ready:
		if err == nil || !strings.Contains(err.Error(), "natstest.ServeMember") {
			t.Fatalf("start of member %s: %v, want an error naming natstest.ServeMember", m.Name(), err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no word from a member whose binary does not serve it")
	}
}
