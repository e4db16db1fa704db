package cgroup

// parseMemoryEvents parses cgroup v2 memory.events into s.Memory.Events,
// which an error leaves as it was.
func parseMemoryEvents(data []byte, s *Stats) error {
	e := s.Memory.Events
	err := statCounts(data, statCount{"low", &e.Low}, statCount{"high", &e.High}, statCount{"max", &e.Max},
		statCount{"oom", &e.OOM}, statCount{"oom_kill", &e.OOMKill}, statCount{"oom_group_kill", &e.OOMGroupKill})
	if err == nil {
		s.Memory.Events = e
	}
	return err
}
