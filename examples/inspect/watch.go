package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// watch prints one line at start and one at every tick until ctx is done:
// the throttling and memory events since the line before (the first line:
// since the cgroup was created), the working set against the limit and the
// pressure. It reads through one cgroup.Watcher, which follows resizes and
// moves.
func watch(ctx context.Context, out io.Writer, w *cgroup.Watcher, ticks <-chan time.Time) error {
	var prev cgroup.Stats
	now := time.Now()
	for {
		lim, err := w.Read()
		if err != nil {
			fmt.Fprintln(out, "limits:", err)
		}
		cur, err := w.Stats()
		if err != nil {
			fmt.Fprintln(out, "stats:", err)
		}
		if _, err := fmt.Fprintln(out, watchLine(now, lim, prev, cur)); err != nil {
			return err
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil
		case now = <-ticks:
		}
	}
}

// watchLine describes the change from prev to cur, and cur, in one line.
func watchLine(now time.Time, lim cgroup.Limits, prev, cur cgroup.Stats) string {
	var b strings.Builder
	b.WriteString(now.Format("15:04:05"))
	if c, p := cur.CPU, prev.CPU; c.Dir != "" {
		periods, throttled := c.Periods-p.Periods, c.ThrottledPeriods-p.ThrottledPeriods
		fmt.Fprintf(&b, "  throttled %d/%d periods", throttled, periods)
		if periods > 0 {
			fmt.Fprintf(&b, " (%.0f%%)", 100*float64(throttled)/float64(periods))
		}
		fmt.Fprintf(&b, " %v", (c.ThrottledTime - p.ThrottledTime).Round(time.Millisecond))
	} else {
		b.WriteString("  throttling n/a")
	}
	if cores, ok := lim.CPUQuota(); ok {
		fmt.Fprintf(&b, " of %.3g cores", cores)
	}
	if m := cur.Memory; m.Dir != "" {
		fmt.Fprintf(&b, "  working set %s", mib(m.WorkingSet))
		if max, ok := lim.MemoryMax(); ok {
			fmt.Fprintf(&b, " of %s (%.0f%%)", mib(max), 100*float64(m.WorkingSet)/float64(max))
		}
	} else {
		b.WriteString("  memory n/a")
	}
	if e, p := cur.Memory.Events, prev.Memory.Events; cur.Memory.HasEvents {
		fmt.Fprintf(&b, "  events max +%d oom_kill +%d", e.Max-p.Max, e.OOMKill-p.OOMKill)
		if lim.Memory.Version == cgroup.V2 {
			fmt.Fprintf(&b, " high +%d", e.High-p.High)
		}
	}
	if ps := cur.Pressure; ps.Dir != "" {
		b.WriteString("  pressure avg10")
		for _, r := range []struct {
			name string
			p    cgroup.Pressure
		}{{"cpu", ps.CPU}, {"memory", ps.Memory}, {"io", ps.IO}} {
			if r.p.HasSome {
				fmt.Fprintf(&b, " %s %.2f%%", r.name, r.p.Some.Avg10)
			}
		}
	} else {
		b.WriteString("  pressure n/a")
	}
	return b.String()
}

// mib prints bytes in MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// runWatch is -watch: one line per second until SIGINT or SIGTERM.
func runWatch(ctx context.Context) int {
	w, err := cgroup.NewWatcher(os.DirFS("/"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "inspect:", err)
		return 1
	}
	defer w.Close()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	if err := watch(ctx, os.Stdout, w, t.C); err != nil {
		fmt.Fprintln(os.Stderr, "inspect:", err)
		return 1
	}
	return 0
}
