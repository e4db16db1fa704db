// Command watch is the TestKubelet/Resize probe: fitgo blank-imported, with the
// Go runtime's own container support off (the GODEBUG defaults of Go 1.23, as
// in a module that says go 1.23), so that every change of GOMAXPROCS is
// fitgo's. It polls the two knobs and the container's cgroup files every few
// milliseconds and prints one JSON line (Sample) at start and at each change,
// with the time of the poll before it (when the old values were still there),
// until it is killed.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	_ "github.com/fitgo/fitgo"
)

// Sample is one line of output.
type Sample struct {
	UnixNano   int64  `json:"unix_nano"`
	PrevPoll   int64  `json:"prev_poll_unix_nano"` // the poll before this one
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOMEMLIMIT int64  `json:"gomemlimit"`
	CPUMax     string `json:"cpu_max"`    // /sys/fs/cgroup/cpu.max
	MemoryMax  string `json:"memory_max"` // /sys/fs/cgroup/memory.max
}

func read(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

func main() {
	enc := json.NewEncoder(os.Stdout)
	var last Sample
	var prev int64
	for i := 0; ; i++ {
		now := time.Now().UnixNano()
		s := Sample{GOMAXPROCS: runtime.GOMAXPROCS(0), GOMEMLIMIT: debug.SetMemoryLimit(-1),
			CPUMax: read("/sys/fs/cgroup/cpu.max"), MemoryMax: read("/sys/fs/cgroup/memory.max")}
		s.UnixNano, s.PrevPoll = last.UnixNano, last.PrevPoll
		if i == 0 || s != last {
			s.UnixNano, s.PrevPoll = now, prev
			enc.Encode(s)
			last = s
		}
		prev = now
		time.Sleep(5 * time.Millisecond)
	}
}
