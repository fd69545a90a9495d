package herdrtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/checkfor"
)

// syncWriter is a strings.Builder the serving goroutine writes to while
// the test reads it.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Serve makes the socket's directory, answers on the socket until ctx
// ends, and says where it listens.
func TestServeAnswersUntilItsContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "herdr.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var out syncWriter
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Config{SocketPath: path}, &out) }()
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(out.String(), path) {
			return fmt.Errorf("Serve said %q, want the socket path", out.String())
		}
		return nil
	})
	if m := ask(t, path, "ping", `{}`); m["error"] != nil {
		t.Errorf("ping = %v", m)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v after ctx ended", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Errorf("socket dir: %v", err)
	}
}
