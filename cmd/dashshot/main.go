package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	var o options
	flag.StringVar(&o.out, "o", "docs/dashboard.png", "where to write the PNG")
	flag.StringVar(&o.fleetd, "fleetd", "", "the fleetd binary to run (default: build ./cmd/fleetd)")
	flag.StringVar(&o.view, "view", "fleet", "which view to capture (fleet, turns, jobs, log, cost)")
	flag.IntVar(&o.agents, "agents", 6, "the demo's --agents")
	flag.IntVar(&o.tasks, "tasks", 18, "the demo's --tasks")
	flag.DurationVar(&o.think, "think", 4*time.Second, "the demo's --think: long enough to catch agents working")
	flag.IntVar(&o.width, "width", 1200, "viewport width, CSS pixels")
	flag.IntVar(&o.height, "height", 500, "viewport height, CSS pixels (the default fits the actions bar and the demo's six agents)")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(1)
	}
}

type options struct {
	out, fleetd, view string
	agents, tasks     int
	think, timeout    time.Duration
	width, height     int
}

// dashboardLine is the demo's line naming the dashboard's URL.
var dashboardLine = regexp.MustCompile(`dashboard: (http://\S+/)`)

func (o options) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	browserPath, err := chromium()
	if err != nil {
		return err
	}
	if o.fleetd == "" {
		dir, err := os.MkdirTemp("", "dashshot-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.fleetd = filepath.Join(dir, "fleetd")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.fleetd, "github.com/fleetd/fleetd/cmd/fleetd")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build fleetd: %w", err)
		}
	}

	// The demo stays up (--keep) so the page never outlives the fabric;
	// it is stopped as a user would, with an interrupt.
	demo := exec.Command(o.fleetd, "demo", "--plain", "--keep",
		"--agents", fmt.Sprint(o.agents), "--tasks", fmt.Sprint(o.tasks), "--think", o.think.String(),
		"--timeout", o.timeout.String())
	demo.Stderr = os.Stderr
	stdout, err := demo.StdoutPipe()
	if err != nil {
		return err
	}
	if err := demo.Start(); err != nil {
		return fmt.Errorf("start fleetd demo: %w", err)
	}
	exited := make(chan error, 1)
	urlc := make(chan string, 1)
	go func() {
		// Echo the demo's report, and pick the dashboard's URL out of it.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if m := dashboardLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		exited <- demo.Wait()
	}()
	defer func() {
		demo.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			demo.Process.Kill()
			<-exited
		}
	}()

	var base string
	select {
	case base = <-urlc:
	case err := <-exited:
		return fmt.Errorf("fleetd demo ended before it served the dashboard: %v", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	png, err := o.shoot(ctx, browserPath, base+"?view="+o.view)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dashshot: wrote %s (%d bytes)\n", o.out, len(png))
	return nil
}

// busy holds once the fleet is visibly at work: in the fleet view, half
// the agents working and every agent with a turn's cost behind it (the
// demo's second round), so every column has something in it. Other views
// need only to be live.
const busy = `document.getElementById('status') && document.getElementById('status').textContent.includes('live') && (
  new URLSearchParams(location.search).get('view') !== 'fleet' || (rows => rows.length > 0 &&
    rows.filter(r => r.dataset.state === 'working').length * 2 >= rows.length &&
    rows.every(r => /[1-9]/.test(r.cells[6].textContent)))(Array.from(document.querySelectorAll('tr.agent'))))`

// shoot opens u in a headless Chromium and captures the viewport once the
// page shows the fleet at work.
func (o options) shoot(ctx context.Context, browserPath, u string) ([]byte, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // often root in a container
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(o.width, o.height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Env("TZ=UTC"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(o.width), int64(o.height)), chromedp.Navigate(u)); err != nil {
		return nil, fmt.Errorf("open %s: %w", u, err)
	}
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](busy,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		return nil, fmt.Errorf("waiting for the fleet at work on %s: %w", u, err)
	}
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return png, nil
}

// chromium finds the browser: $FLEET_CHROMIUM, else chromium or Chrome on
// PATH.
func chromium() (string, error) {
	if p := os.Getenv("FLEET_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (apt-get install chromium, or set FLEET_CHROMIUM)")
}
