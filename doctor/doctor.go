package doctor

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Status is how a check came out.
type Status string

// The statuses, worst last but one: Skip is a check that did not apply.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's line.
type Result struct {
	// Check names what was checked: "herdr", "role w-claude", "nats", …
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail says what was found, on one line.
	Detail string `json:"detail"`
	// Fix says what to do; empty when there is nothing to do.
	Fix string `json:"fix"`
}

// DefaultTimeout bounds each check: long enough for a node CLI's
// --version on a loaded machine, short enough that a run with NATS
// unreachable still takes seconds.
const DefaultTimeout = 3 * time.Second

// Config is what to check, as the CLI's flags say.
type Config struct {
	// Version is fleetd's own, and Executable its path ("" when unknown).
	Version    string
	Executable string
	// Herdr is the herdr socket; "" resolves it as herdr does. NoHerdr
	// skips herdr (a host that runs `fleetd up --no-herdr`).
	Herdr   string
	NoHerdr bool
	// RolesFile is the roles file; "" checks the built-in roles.
	RolesFile string
	// NATSURL is the fabric's NATS ("" is nats://127.0.0.1:4222, where
	// `fleetd up` listens by default), reached as Creds or NATSToken.
	NATSURL   string
	Creds     string
	NATSToken string
	// ShimURL is the lead shim's base URL, called with ShimToken and
	// ShimTLS (nil: the system's CAs).
	ShimURL   string
	ShimToken string
	ShimTLS   *tls.Config
	// DataDir is where `fleetd up` keeps the JetStream store.
	DataDir string
	// Timeout bounds each check (DefaultTimeout when zero).
	Timeout time.Duration
}

// Run runs every check at once and returns their lines in a fixed order:
// the binary, herdr, the roles and their commands, NATS (the server, the
// FLEET stream, the clock), the shim, the disk.
func Run(ctx context.Context, cfg Config) []Result {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	groups := []func(context.Context, Config) []Result{checkBinary, checkHerdr, checkRoles, checkNATS, checkShim, checkDisk}
	out := make([][]Result, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { out[i] = g(ctx, cfg) })
	}
	wg.Wait()
	return slices.Concat(out...)
}

// Failed reports whether any check failed.
func Failed(rs []Result) bool {
	return slices.ContainsFunc(rs, func(r Result) bool { return r.Status == Fail })
}

// Count is how many results have status s.
func Count(rs []Result, s Status) int {
	n := 0
	for _, r := range rs {
		if r.Status == s {
			n++
		}
	}
	return n
}

// WriteText writes one line per result, the status and the check in
// aligned columns, then the detail and, after " — ", the fix:
//
//	ok    nats          nats://127.0.0.1:4222 as no credentials: …
//	fail  herdr         no herdr socket at /…/herdr.sock — start herdr …
func WriteText(w io.Writer, rs []Result) error {
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Check))
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%-4s  %-*s  %s", r.Status, width, r.Check, r.Detail)
		if r.Fix != "" {
			b.WriteString(" — " + r.Fix)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the results as one JSON array of {check, status,
// detail, fix}, for scripts.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

func ok(check, detail string) Result { return Result{Check: check, Status: OK, Detail: detail} }
func warn(check, detail, fix string) Result {
	return Result{Check: check, Status: Warn, Detail: detail, Fix: fix}
}
func fail(check, detail, fix string) Result {
	return Result{Check: check, Status: Fail, Detail: detail, Fix: fix}
}
func skip(check, detail, fix string) Result {
	return Result{Check: check, Status: Skip, Detail: detail, Fix: fix}
}

// oneLine keeps an error on its result's line: errors.Join's newlines
// (a roles file's every problem) become "; ".
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
