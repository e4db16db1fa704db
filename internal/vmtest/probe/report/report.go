// Package report is the wire format of the vm tests' probes: each probe prints
// one line "FITGO-RESULT {json}" per result on standard output, where the
// guest's console carries it to the test, which decodes it with the same types.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// Header names the scenario and the probe of a result. Every result embeds it.
type Header struct {
	Scenario string `json:"scenario"`
	Probe    string `json:"probe"`
}

// Emit prints v, a struct embedding Header, as one FITGO-RESULT line with a
// single write, so that lines of concurrent probes do not mix.
func Emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		Fail(fmt.Sprintf("marshal %T: %v", v, err))
	}
	os.Stdout.Write(append(append([]byte("FITGO-RESULT "), b...), '\n'))
}

// Fail prints a FITGO-ERROR line, which fails the test, and exits.
func Fail(msg string) {
	fmt.Printf("FITGO-ERROR %s: %s\n", os.Args[0], msg)
	os.Exit(1)
}

// Limits is cgroup.Limits with its errors as text (an error value does not
// survive encoding/json).
type Limits struct {
	cgroup.Limits
	CPUErr    string `json:"cpu_err,omitempty"`
	MemoryErr string `json:"memory_err,omitempty"`
	Err       string `json:"err,omitempty"` // the error returned with the limits
}

// NewLimits converts what cgroup.Read returned.
func NewLimits(l cgroup.Limits, err error) Limits {
	r := Limits{Limits: l, CPUErr: errText(l.CPU.Err), MemoryErr: errText(l.Memory.Err), Err: errText(err)}
	r.Limits.CPU.Err, r.Limits.Memory.Err = nil, nil
	return r
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Runtime is the state of the Go runtime's two knobs.
type Runtime struct {
	GOMAXPROCS int   `json:"gomaxprocs"`
	GOMEMLIMIT int64 `json:"gomemlimit"` // math.MaxInt64 means no limit
	NumCPU     int   `json:"numcpu"`
}

// ReadRuntime returns the current GOMAXPROCS and memory limit without changing them.
func ReadRuntime() Runtime {
	return Runtime{GOMAXPROCS: runtime.GOMAXPROCS(0), GOMEMLIMIT: debug.SetMemoryLimit(-1), NumCPU: runtime.NumCPU()}
}

// Read is what "explicit read" prints: cgroup.Read's result.
type Read struct {
	Header
	Limits  Limits  `json:"limits"`
	Runtime Runtime `json:"runtime"`
}

// Burn is what "explicit burn" prints: how cpu.stat of the effective CPU
// cgroup (cgroup.ReadCPUStat) changed while the probe kept Threads goroutines
// spinning.
type Burn struct {
	Header
	Limits  Limits  `json:"limits"`
	Runtime Runtime `json:"runtime"`
	Threads int     `json:"threads"`
	// Wall is the time between the two cpu.stat readings.
	Wall   time.Duration  `json:"wall_ns"`
	Before cgroup.CPUStat `json:"before"`
	After  cgroup.CPUStat `json:"after"`
	Delta  cgroup.CPUStat `json:"delta"`
}
