// Package variant lists the benchmark's variants: the ways a Go program can be
// fitted (or not) to its container, each a workload binary in bench/cmd.
package variant

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Variant is one way of running the workload.
type Variant struct {
	// Name is the variant's name in flags, results and reports.
	Name string
	// Cmd is the main package's directory relative to the bench module root,
	// e.g. "cmd/fitgo"; the binary is named after its last element.
	Cmd string
	// Doc says what the variant stands for.
	Doc string
	// DownwardAPI is true for the variant that gets GOMAXPROCS and GOMEMLIMIT
	// from the environment, as Kubernetes' downward API would set them.
	DownwardAPI bool
}

// Binary returns the file name of the variant's binary.
func (v Variant) Binary() string { return v.Cmd[strings.LastIndexByte(v.Cmd, '/')+1:] }

// All is every variant, in report order.
var All = []Variant{
	{Name: "untuned", Cmd: "cmd/untuned", Doc: "a go ≤1.24 program: GOMAXPROCS = CPU count, no GOMEMLIMIT"},
	{Name: "runtime", Cmd: "cmd/runtime", Doc: "the Go ≥1.25 runtime's default: leaf cgroup quota rounded up, at least 2; no GOMEMLIMIT"},
	{Name: "env", Cmd: "cmd/env", Doc: "downward-API env vars: GOMAXPROCS = ceil(CPU limit), GOMEMLIMIT = memory limit", DownwardAPI: true},
	{Name: "automaxprocs+automemlimit", Cmd: "cmd/automaxprocs-automemlimit", Doc: "go.uber.org/automaxprocs and KimMachineGun/automemlimit blank-imported"},
	{Name: "fitgo", Cmd: "cmd/fitgo", Doc: "fitgo blank-imported with its defaults"},
	{Name: "fitgo-ceil", Cmd: "cmd/fitgo-ceil", Doc: "fitgo with the runtime's rounding (quota rounded up)"},
}

// Names returns the names of All.
func Names() []string {
	out := make([]string, len(All))
	for i, v := range All {
		out[i] = v.Name
	}
	return out
}

// Lookup returns the variant called name.
func Lookup(name string) (Variant, bool) {
	for _, v := range All {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Parse parses a comma-separated list of variant names; "all" or "" means All.
func Parse(list string) ([]Variant, error) {
	if list = strings.TrimSpace(list); list == "" || list == "all" {
		return All, nil
	}
	var out []Variant
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		v, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown variant %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		for _, o := range out {
			if o.Name == n {
				return nil, fmt.Errorf("variant %q listed twice", n)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// DownwardEnv returns the environment Kubernetes' downward API gives the env
// variant: GOMAXPROCS from limits.cpu rounded up to whole CPUs, GOMEMLIMIT from
// limits.memory in bytes. Without a limit the downward API reports the node's
// allocatable resources, here hostCPUs and hostMemory.
func DownwardEnv(cpus float64, memory int64, hostCPUs int, hostMemory int64) []string {
	procs := hostCPUs
	if cpus > 0 {
		procs = int(math.Ceil(cpus - 1e-9))
	}
	mem := hostMemory
	if memory > 0 {
		mem = memory
	}
	env := []string{"GOMAXPROCS=" + strconv.Itoa(max(procs, 1))}
	if mem > 0 {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(mem, 10))
	}
	return env
}
