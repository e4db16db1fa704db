// Command blankleak is blank with a leak, for the leak guard's real-kernel
// test: at its start it takes 176 MiB of pointer-rich live heap, then adds
// 2 MiB a second that it never frees, next to 16 MiB a second of garbage
// (the allocations of a service at work), until the kernel kills it. Under
// a 256 MiB limit its GC is pinned at GOMEMLIMIT (0.9 × 256 MiB) within
// seconds.
package main

import (
	"time"

	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

// node is 64 bytes of pointers: marking it costs the GC a scan.
type node struct {
	next *node
	kids [7]*node
}

const (
	nodeBytes = 64
	startMiB  = 176
	leakMiB   = 2  // a second
	churnMiB  = 16 // a second
)

var (
	held [][]*node // in chunks, so that growing it copies little
	last [7]*node
	sink *node
)

const chunk = 1 << 12

// add adds n nodes to the held heap, each pointing at the ones before.
func add(n int) {
	for range n {
		x := &node{kids: last}
		if len(held) == 0 || len(held[len(held)-1]) == chunk {
			held = append(held, make([]*node, 0, chunk))
		}
		held[len(held)-1] = append(held[len(held)-1], x)
		copy(last[1:], last[:len(last)-1])
		last[0] = x
		x.next = last[1]
	}
}

func leak() {
	add(startMiB << 20 / nodeBytes)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		add(leakMiB << 20 / nodeBytes / 100)
		for range churnMiB << 20 / nodeBytes / 100 {
			sink = &node{}
		}
	}
}

func main() {
	go leak()
	run.Run()
}
