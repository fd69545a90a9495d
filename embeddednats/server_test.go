package embeddednats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
)

// A cluster member that cannot reach the others gives up after
// ReadyTimeout and says it never had a meta leader, and whom it reached:
// nobody, which points at the routes rather than at an election.
func TestAMemberWithNoPeersSaysItsRoutesReachNobody(t *testing.T) {
	ports := natstest.FreePorts(t, 3)
	routes := make([]string, len(ports))
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	srv, err := embeddednats.New(embeddednats.Config{DataDir: t.TempDir(), ServerName: "alone", ClusterName: "c",
		ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[0]), Routes: routes, ReadyTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = srv.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "meta leader") || !strings.Contains(err.Error(), "routes up to no member") {
		t.Fatalf("Start = %v, want no meta leader with routes up to no member", err)
	}
}
