package memlimit

import (
	"log/slog"
	"strconv"

	"github.com/fitgo/fitgo/cgroup"
)

// The memory events of a Result are read where it is made for the caller,
// by Status and Plan, from the cgroup directory that bound the value: not by
// Apply, whose cost stays that of reading the limits, nor by the refresh,
// whose tick stays allocation-free. The counters are cumulative, so a read
// at Status is the freshest figure; the directory is that of the last good
// reading.

// readEvents sets r.Events from the statistics of r.Source when the limit
// there is a cgroup's, else clears them. A statistics file that cannot be
// read only leaves the events out: they never touch Err.
func (f *Fit) readEvents(r *Result) {
	var st cgroup.Stats
	switch r.From {
	case "memory.max", "memory.high", "memory.limit_in_bytes":
		st, _ = cgroup.ReadStatsDir(f.env.cgroups, r.Source)
	} // else no limit, MemTotal, or an upper limit from outside: no cgroup
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
	for _, c := range [...]struct {
		name string
		n    uint64
	}{{"oom_kill", e.OOMKill}, {"oom_group_kill", e.OOMGroupKill}, {"oom", e.OOM}, {"max", e.Max}, {"high", e.High}, {"low", e.Low}} {
		if c.n > 0 {
			out = append(out, slog.Uint64(c.name, c.n))
		}
	}
	return out
}

// eventsText is eventCounts as "memory events at dir: oom_kill 1, max 12",
// "" when there are none.
func (r *Result) eventsText() string {
	counts := r.eventCounts()
	if len(counts) == 0 {
		return ""
	}
	s := "memory events at " + r.Source + ":"
	for i, a := range counts {
		if i > 0 {
			s += ","
		}
		s += " " + a.Key + " " + strconv.FormatUint(a.Value.Uint64(), 10)
	}
	return s
}
