package cgroup

import (
	"cmp"
	"errors"
)

// headroom is Memory.Headroom's type.
type headroom = struct {
	Source, From                     string
	Limit, Usage, Own, Others, Avail int64
	Err                              error
}

var errNoRssAnon = errors.New("no RssAnon line")

// margin is the amount of others at a level with limit bytes that is taken
// as the process's own kernel memory and file cache (see Memory.Headroom).
func margin(limit int64) int64 { return max(limit/32, 8<<20) }

// headroomEval collects the levels of one evaluation.
type headroomEval struct {
	h       headroom
	own     int64
	ownRead bool // own has been read (or failed, in h.Err)
	ownOK   bool
}

// level adds the level dir whose own limits are max and high (-1: none).
func (e *headroomEval) level(w *Watcher, v Version, dir string, lmax, high int64) {
	limit, from := lmax, "memory.max"
	if v == V1 {
		from = "memory.limit_in_bytes"
	}
	if high >= 0 && (limit < 0 || high < limit) {
		limit, from = high, "memory.high"
	}
	if limit < 0 {
		return
	}
	if !e.ownRead {
		e.ownRead = true
		e.own, e.ownOK = e.read(w, "/proc/self", "status", parseProcStatusOwn)
	}
	if !e.ownOK {
		return
	}
	usageFile, inactiveKey := usageFiles(v)
	usage, ok := e.read(w, dir, usageFile, parseUsage)
	if !ok {
		return
	}
	inactive, ok := e.read(w, dir, "memory.stat", func(b []byte) (int64, error) {
		v, _, err := statValue(b, inactiveKey, unlimitedMemory-1)
		return int64(v), err
	})
	if !ok {
		return
	}
	ws := workingSet(usage, inactive)
	others := max(ws-e.own, 0)
	avail := limit
	if others > margin(limit) {
		avail = limit - others
	}
	if e.h.Source == "" || avail < e.h.Avail {
		e.h = headroom{Source: dir, From: from, Limit: limit, Usage: ws, Own: e.own, Others: others, Avail: avail, Err: e.h.Err}
	}
}

// read reads dir/name with parse; false when it is missing or bad (the
// first error kept in h.Err).
func (e *headroomEval) read(w *Watcher, dir, name string, parse func([]byte) (int64, error)) (v int64, ok bool) {
	found, err := w.parse(dir, name, func(b []byte) (err error) {
		v, err = parse(b)
		return err
	})
	e.h.Err = cmp.Or(e.h.Err, err)
	return v, found && err == nil
}

// usageFiles are the file of the usage and the memory.stat key of the
// inactive page cache, which the working set leaves out.
func usageFiles(v Version) (usage, inactiveKey string) {
	if v == V1 {
		return "memory.usage_in_bytes", "total_inactive_file"
	}
	return "memory.current", "inactive_file"
}

// workingSet is usage less the inactive page cache, never below zero, as the
// kubelet and cAdvisor count it (container_memory_working_set_bytes).
func workingSet(usage, inactive int64) int64 { return max(usage-inactive, 0) }

// parseUsage parses memory.current (v2) or memory.usage_in_bytes (v1): bytes.
func parseUsage(data []byte) (int64, error) {
	return parseCount(data, "memory usage", unlimitedMemory-1)
}

// parseProcStatusOwn returns RssAnon + RssShmem of /proc/self/status, lines
// such as "RssAnon:\t    1234 kB", in bytes. RssAnon is required (Linux
// 4.5 and later); RssShmem is 0 when missing.
func parseProcStatusOwn(data []byte) (int64, error) {
	var total int64
	anon := false
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, v := nextField(line)
		isAnon := string(k) == "RssAnon:"
		if !isAnon && string(k) != "RssShmem:" {
			continue
		}
		num, unit := nextField(v)
		u, ok := parseUint(num)
		if !ok || string(unit) != "kB" || u >= unlimitedMemory>>10 {
			return 0, invalid(n, string(k[:len(k)-1]), line)
		}
		total += int64(u) << 10
		anon = anon || isAnon
	}
	if !anon {
		return 0, &parseError{Err: errNoRssAnon}
	}
	return total, nil
}
