package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockName is the lock file, in a repository's git directory, that
// serialises fleetd's changes to that repository's worktrees.
const lockName = "fleetd-worktrees.lock"

// lock takes the repository's worktree lock (an exclusive flock, so it is
// let go when the process dies), waiting while someone else holds it.
func lock(ctx context.Context, gitDir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(gitDir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worktree lock: %w", err)
	}
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("worktree lock %s: %w", f.Name(), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("worktree lock %s: %w", f.Name(), ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
