package results

import (
	"math"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// Pressure is how the pressure stall totals of a cgroup grew over a window:
// the milliseconds in which some task (Some) or every task at once (Full)
// waited for the CPU, for memory or for I/O, and the window's length. It is
// only there where the kernel has pressure files for the cgroup (cgroup v2
// with PSI), and absent otherwise.
type Pressure struct {
	WindowMS     float64 `json:"window_ms"`
	CPUSomeMS    float64 `json:"cpu_some_ms"`
	CPUFullMS    float64 `json:"cpu_full_ms"`
	MemorySomeMS float64 `json:"memory_some_ms"`
	MemoryFullMS float64 `json:"memory_full_ms"`
	IOSomeMS     float64 `json:"io_some_ms"`
	IOFullMS     float64 `json:"io_full_ms"`
}

// NewPressure returns the change of the pressure totals from prev to cur,
// two readings of the same cgroup window apart; nil when either has no
// pressure files or they are of different cgroups.
func NewPressure(cur, prev cgroup.Stats, window time.Duration) *Pressure {
	c, p := cur.Pressure, prev.Pressure
	if c.Dir == "" || c.Dir != p.Dir {
		return nil
	}
	ms := func(a, b time.Duration) float64 { return float64(a-b) / float64(time.Millisecond) }
	return &Pressure{
		WindowMS:     float64(window) / float64(time.Millisecond),
		CPUSomeMS:    ms(c.CPU.Some.Total, p.CPU.Some.Total),
		CPUFullMS:    ms(c.CPU.Full.Total, p.CPU.Full.Total),
		MemorySomeMS: ms(c.Memory.Some.Total, p.Memory.Some.Total),
		MemoryFullMS: ms(c.Memory.Full.Total, p.Memory.Full.Total),
		IOSomeMS:     ms(c.IO.Some.Total, p.IO.Some.Total),
		IOFullMS:     ms(c.IO.Full.Total, p.IO.Full.Total),
	}
}

// CPUShare is the share of the window in which some task waited for the
// CPU; NaN without pressure.
func (p *Pressure) CPUShare() float64 {
	return p.share(func(p *Pressure) float64 { return p.CPUSomeMS })
}

// MemoryShare is the share of the window in which some task waited for
// memory (reclaim, swap-in, refaults); NaN without pressure.
func (p *Pressure) MemoryShare() float64 {
	return p.share(func(p *Pressure) float64 { return p.MemorySomeMS })
}

func (p *Pressure) share(f func(*Pressure) float64) float64 {
	if p == nil || !(p.WindowMS > 0) {
		return math.NaN()
	}
	return f(p) / p.WindowMS
}
