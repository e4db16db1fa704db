package cgroup

// parseMemoryEvents parses cgroup v2 memory.events into s.Memory.Events,
// which an error leaves as it was.
func parseMemoryEvents(data []byte, s *Stats) error {
	e := s.Memory.Events
	err := statCounts(data, []string{"low", "high", "max", "oom", "oom_kill", "oom_group_kill"},
		&e.Low, &e.High, &e.Max, &e.OOM, &e.OOMKill, &e.OOMGroupKill)
	if err == nil {
		s.Memory.Events = e
	}
	return err
}
