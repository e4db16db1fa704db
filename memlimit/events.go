package memlimit

import (
	"log/slog"

	"github.com/fitgo/fitgo/cgroup"
)

// readEvents sets r.Events from r.Source when the limit there is a
// cgroup's, else clears them; a file that cannot be read leaves them out.
// Status and Plan call it, not Apply (whose cost stays that of reading the
// limits) nor the refresh (whose tick allocates nothing): the counters are
// cumulative, so a read at Status is the freshest.
func (f *Fit) readEvents(r *Result) {
	var st cgroup.Stats
	if r.file.cgroup() {
		st, _ = cgroup.ReadEventsDir(f.env.cgroups, r.Source)
	}
	r.Events, r.HasEvents = st.Memory.Events, st.Memory.HasEvents
}

// eventCounts lists the non-zero memory events of r by their kernel names,
// those that tell how hard the limit was hit first.
func (r *Result) eventCounts() []slog.Attr {
	if !r.HasEvents {
		return nil
	}
	e := &r.Events
	var out []slog.Attr
	names := [...]string{"oom_kill", "oom_group_kill", "oom", "max", "high", "low"}
	for i, n := range [...]uint64{e.OOMKill, e.OOMGroupKill, e.OOM, e.Max, e.High, e.Low} {
		if n > 0 {
			out = append(out, slog.Uint64(names[i], n))
		}
	}
	return out
}
