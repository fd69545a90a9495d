package embeddednats_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// The server takes atomic batches of MaxAtomicBatch messages (a
// projection's catch-up writes thousands of view entries at once), unless
// its config file sets a limit of its own; MaxBatch says which.
func TestTheServerTakesLargeAtomicBatchesUnlessItsConfigSaysOtherwise(t *testing.T) {
	strict := filepath.Join(t.TempDir(), "strict.conf")
	if err := os.WriteFile(strict, []byte("jetstream { limits { batch { max_msgs: 1000 } } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file string
		want int
	}{
		{"default", "", embeddednats.MaxAtomicBatch},
		{"config file", strict, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := embeddednats.New(embeddednats.Config{DataDir: t.TempDir(), ServerName: "b", ConfigFile: c.file})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if got := srv.MaxBatch(); got != 0 {
				t.Errorf("MaxBatch before Start = %d, want 0", got)
			}
			if err := srv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := srv.MaxBatch(); got != c.want {
				t.Errorf("MaxBatch = %d, want %d", got, c.want)
			}
		})
	}
}
