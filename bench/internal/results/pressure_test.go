package results

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/cgroup"
)

func TestNewPressure(t *testing.T) {
	reading := func(dir string, cpu, mem time.Duration) cgroup.Stats {
		var s cgroup.Stats
		s.Pressure.Dir = dir
		s.Pressure.CPU.Some.Total, s.Pressure.CPU.Full.Total = cpu, cpu/2
		s.Pressure.Memory.Some.Total = mem
		return s
	}
	p := NewPressure(reading("/a", 3*time.Second, 200*time.Millisecond), reading("/a", time.Second, 0), 10*time.Second)
	assert.Equal(t, &Pressure{WindowMS: 10000, CPUSomeMS: 2000, CPUFullMS: 1000, MemorySomeMS: 200}, p)
	assert.InDelta(t, 0.2, p.CPUShare(), 1e-12)
	assert.InDelta(t, 0.02, p.MemoryShare(), 1e-12)

	assert.Nil(t, NewPressure(cgroup.Stats{}, cgroup.Stats{}, time.Second), "cgroup v1: no pressure files")
	assert.Nil(t, NewPressure(reading("/a", 0, 0), reading("/b", 0, 0), time.Second), "different cgroups")
	assert.True(t, math.IsNaN((*Pressure)(nil).CPUShare()))
	assert.True(t, math.IsNaN((&Pressure{}).MemoryShare()), "no window")

	r := Run{Pressure: &Pressure{WindowMS: 1}}
	assert.Same(t, r.Pressure, r.Stalls())
	r.Workload = &Workload{Pressure: &Pressure{WindowMS: 2}}
	assert.Same(t, r.Workload.Pressure, r.Stalls(), "the workload's window wins")

	s := Summarize([]Run{r, {Workload: &Workload{}}})
	assert.Equal(t, Float(0), s[0].CPUPressure, "the median of the runs that have it")
	s = Summarize([]Run{{Workload: &Workload{}}})
	assert.True(t, math.IsNaN(float64(s[0].CPUPressure)))
}
