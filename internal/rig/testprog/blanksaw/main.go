// Command blanksaw is a blank-import program whose live heap follows a
// shape, for the leak guard's real-kernel test. It keeps a pointer-rich
// live heap (as blankleak) next to 32 MiB a second of garbage, and at each
// tick of 250 ms, the refresh the test gives fitgo, sets the live heap to
// the shape's value and writes a line: the tick, the phase, GOMEMLIMIT.
// SHAPE=saw: a heap built to 210 MiB, then teeth of 48 ticks (12 s) that
// fall to 160 MiB, rise to 210 MiB in 40 ticks and stay 7 (the issue's
// teeth under a 256 MiB limit, compressed). SHAPE=burst: 24 MiB for 4
// ticks, up to 200 MiB in 60 ticks, there for 40, then back to 24 MiB for
// good (phase "fallen"). It returns when stdin is closed.
package main

import (
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/internal/rig/testprog"
)

// node is 64 bytes of pointers: marking it costs the GC a scan.
type node struct {
	next *node
	kids [7]*node
}

const (
	nodeBytes = 64
	chunk     = 1 << 20 / (nodeBytes + 8) // nodes: 1 MiB with their pointers
	churnMiB  = 8                         // a tick
)

var (
	held [][]*node
	sink *node
)

// hold sets the live heap to mib MiB.
func hold(mib int) {
	for len(held) > mib {
		held[len(held)-1] = nil
		held = held[:len(held)-1]
	}
	for len(held) < mib {
		c := make([]*node, chunk)
		for i := range c {
			c[i] = &node{}
			if i > 0 {
				c[i].next = c[i-1]
			}
		}
		held = append(held, c)
	}
}

// shape is the live heap in MiB at tick k, and the phase.
func shape(saw bool, k int) (int, string) {
	if saw {
		if k < 4 {
			return 210, "build"
		}
		tooth, t := (k-4)/48, (k-4)%48
		phase := "tooth " + strconv.Itoa(tooth+1)
		if t < 40 {
			return 160 + 50*t/40, phase
		}
		return 210, phase
	}
	switch {
	case k < 4:
		return 24, "before"
	case k < 64:
		return 24 + 176*(k-3)/60, "burst"
	case k < 104:
		return 200, "burst"
	}
	return 24, "fallen"
}

func main() {
	saw := os.Getenv("SHAPE") == "saw"
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	enc := json.NewEncoder(os.Stdout)
	tick := time.NewTicker(25 * time.Millisecond) // a tenth of a tick
	defer tick.Stop()
	for k := 0; ; k++ {
		mib, phase := shape(saw, k)
		hold(mib)
		enc.Encode(testprog.State{Tick: k, Phase: phase, GOMEMLIMIT: debug.SetMemoryLimit(-1)})
		for range 10 {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for range churnMiB << 20 / nodeBytes / 10 {
				sink = &node{}
			}
		}
	}
}
