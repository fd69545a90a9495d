package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// defaultTimeout bounds one git command when ctx has no deadline.
const defaultTimeout = 30 * time.Second

// gitEnv is the environment git runs with: the caller's, without what
// would point git at another repository (a hook of git's own, a
// sandbox's leftovers), in the C locale, never prompting, and taking no
// optional locks, so a status run beside the agent's own git never
// makes it fail on index.lock.
func gitEnv() []string {
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LC_ALL", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
			"GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// git runs git -C dir args and returns its stdout, trimmed of the final
// newline. A failure wraps ErrGit with git's stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return "", fmt.Errorf("%w: git %s: %v", ErrGit, strings.Join(args, " "), err)
		}
		return stdout.String(), &gitError{args: args, code: exit.ExitCode(), msg: msg}
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// gitError is a git command that ran and failed.
type gitError struct {
	args []string
	code int
	msg  string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), e.msg)
}

func (e *gitError) Is(target error) bool { return target == ErrGit }

// exitCode is the exit status of a git command that ran and failed, or -1.
func exitCode(err error) int {
	var g *gitError
	if errors.As(err, &g) {
		return g.code
	}
	return -1
}
