package cgroup

// The memory event files.
const (
	fileMemoryEvents  = "memory.events"      // v2
	fileMemoryFailcnt = "memory.failcnt"     // v1: times the usage hit the limit
	fileOOMControl    = "memory.oom_control" // v1: oom_kill (Linux 4.13 and later)
)

// parseMemoryEvents parses cgroup v2 memory.events, "key value" lines (low,
// high, max, oom, oom_kill, oom_group_kill), into s.Memory.Events. Unknown
// keys are ignored; a known key with a value that is not a number is an
// error on that line, and leaves s as it was.
func parseMemoryEvents(data []byte, s *Stats) error {
	e := s.Memory.Events
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, v := nextField(line)
		var p *uint64
		switch string(k) {
		case "low":
			p = &e.Low
		case "high":
			p = &e.High
		case "max":
			p = &e.Max
		case "oom":
			p = &e.OOM
		case "oom_kill":
			p = &e.OOMKill
		case "oom_group_kill":
			p = &e.OOMGroupKill
		default:
			continue
		}
		u, ok := parseUint(trimSpace(v))
		if !ok {
			return invalid(n, string(k), line)
		}
		*p = u
	}
	s.Memory.Events = e
	return nil
}
