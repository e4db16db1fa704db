// Package variant lists the benchmark's variants: the ways a Go program can be
// fitted (or not) to its container, each a workload binary in bench/cmd.
package variant

import (
	"fmt"
	"math"
	"slices"
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
	// Env is added to the workload's environment, e.g. FITGO=rounding=ceil.
	Env []string
	// HeadroomOracle is true for the variants that are given GOMEMLIMIT =
	// Ratio × (the memory limit − what the shared scenario's sidecar holds):
	// the value a limit that accounts for the others would set (without a
	// sidecar, Ratio × the limit).
	HeadroomOracle bool
	// Ratio is the oracle's share of that memory; 0 is 0.9, fitgo's default.
	Ratio float64
	// OOMProfile is true for the variant run with FITGO=oomprofile=DIR, a
	// directory of its own per run that the local runner makes, counts the
	// captures in (Run.OOMCaptures) and removes.
	OOMProfile bool
}

// OraclePrefix starts the names of the oracles at another ratio than
// 0.9: oracle-0.95 is GOMEMLIMIT = 0.95 × (limit − sidecar), a fixed value
// of the sweep that measures how close to the limit GOMEMLIMIT may go.
const OraclePrefix = "oracle-"

// OracleAt returns the oracle at ratio r.
func OracleAt(r float64) Variant {
	s := strconv.FormatFloat(r, 'f', -1, 64)
	return Variant{Name: OraclePrefix + s, Cmd: "cmd/runtime", HeadroomOracle: true, Ratio: r,
		Doc: "the runtime variant with GOMEMLIMIT = " + s + " × (memory limit − what the sidecar holds), set by the runner"}
}

// Binary returns the file name of the variant's binary.
func (v Variant) Binary() string { return v.Cmd[strings.LastIndexByte(v.Cmd, '/')+1:] }

// All is the default variants, in report order.
var All = []Variant{
	{Name: "untuned", Cmd: "cmd/untuned", Doc: "a go ≤1.24 program: GOMAXPROCS = CPU count, no GOMEMLIMIT"},
	{Name: "runtime", Cmd: "cmd/runtime", Doc: "the Go ≥1.25 runtime's default: leaf cgroup quota rounded up, at least 2; no GOMEMLIMIT"},
	{Name: "env", Cmd: "cmd/env", Doc: "downward-API env vars: GOMAXPROCS = ceil(CPU limit), GOMEMLIMIT = memory limit", DownwardAPI: true},
	{Name: "automaxprocs+automemlimit", Cmd: "cmd/automaxprocs-automemlimit", Doc: "go.uber.org/automaxprocs and KimMachineGun/automemlimit blank-imported"},
	{Name: "fitgo", Cmd: "cmd/fitgo", Doc: "fitgo blank-imported with its defaults (GOMAXPROCS: the quota rounded up, at least 1)"},
	rule("floor"),
}

// Oracle is the shared scenario's reference: the runtime variant's binary
// with GOMEMLIMIT = 0.9 × (limit − sidecar), the value fitgo's defaults
// (ratio 0.9) would give a limit that accounts for the sidecar.
var Oracle = Variant{Name: "oracle-headroom", Cmd: "cmd/runtime", HeadroomOracle: true,
	Doc: "the runtime variant with GOMEMLIMIT = 0.9 × (memory limit − what the sidecar holds), set by the runner: the limit that accounts for the others"}

// SidecarName names the shared scenario's sidecar among the binaries the
// runners build (it is not a variant); Sidecar is its entry.
const SidecarName = "sidecar"

var Sidecar = Variant{Name: SidecarName, Cmd: "cmd/sidecar", Doc: "the shared scenario's sidecar: holds memory resident"}

// Memory is the default variants of the memory scenarios that have no use
// for the rounding rules, in report order; Shared and Leak add theirs.
var Memory = []Variant{All[0], All[1], All[2], All[3], All[4]}

// Shared is the shared scenario's default variants: Memory and the oracle.
var Shared = append(slices.Clone(Memory), Oracle)

// NoGuard is fitgo's blank import with its leak guard off: the leak
// scenario's fitgo without the guard.
var NoGuard = Variant{Name: "fitgo-noguard", Cmd: "cmd/fitgo", Env: []string{"FITGO=leakguard=off"},
	Doc: "fitgo blank-imported with FITGO=leakguard=off: GOMEMLIMIT stays at the policy's value while the GC is pinned at it"}

// The gc scenario's variants beside fitgo's, automemlimit and the runtime's.
var (
	GCPolicy = Variant{Name: "fitgo-gc", Cmd: "cmd/fitgo", Env: []string{"FITGO=gc=auto"},
		Doc: "fitgo blank-imported with FITGO=gc=auto: GOGC raised so that the heap may use up to 70 % of the memory available"}
	GCOff = Variant{Name: "gogc-off", Cmd: "cmd/fitgo", Env: []string{"GOGC=off"}, HeadroomOracle: true,
		Doc: "GOGC=off and GOMEMLIMIT = 0.9 × the memory limit in the environment, set by the runner (the Go GC guide's recipe for a program alone in its container), in fitgo's binary so that GOMAXPROCS is fitgo's"}
	GCTuner = Variant{Name: "gctuner", Cmd: "cmd/gctuner",
		Doc: "ByteDance's gctuner (github.com/bytedance/gopkg/util/gctuner v0.1.4) with its documented threshold, 70 % of the memory limit: GOGC between 50 and 500 after each GC; no GOMEMLIMIT; with automaxprocs, so that GOMAXPROCS is fitgo's"}
)

// GC is the gc scenario's default variants, in report order: fitgo first,
// the base of its ratios.
var GC = []Variant{All[4], GCPolicy, GCOff, GCTuner, All[3], All[1]}

// OOMProfile is fitgo's blank import with its OOM capture on: the
// capture's overhead beside fitgo in the memory scenarios (local runner
// only).
var OOMProfile = Variant{Name: "fitgo-oomprofile", Cmd: "cmd/fitgo", OOMProfile: true,
	Doc: "fitgo blank-imported with FITGO=oomprofile=DIR (a directory per run, made by the runner): a heap profile and a breakdown written once the memory held passes 90 % of the limit"}

// extra are the variants outside All and Rules that flags can name.
func extra() []Variant { return []Variant{Oracle, NoGuard, GCPolicy, GCOff, GCTuner, OOMProfile} }

// Leak is the leak scenario's default variants: Memory, and fitgo without
// its leak guard.
var Leak = append(slices.Clone(Memory), NoGuard)

// Rules are fitgo's blank import with each of its rounding rules
// (FITGO=rounding=...); All has the one that is not the default.
var Rules = []Variant{rule("floor"), rule("ceil"), rule("nearest")}

func rule(name string) Variant {
	return Variant{Name: "fitgo-" + name, Cmd: "cmd/fitgo", Env: []string{"FITGO=rounding=" + name},
		Doc: "fitgo blank-imported with FITGO=rounding=" + name}
}

// StaticPrefix starts the names of the static variants, GOMAXPROCS=1 to
// GOMAXPROCS=<CPU count>: the runtime variant's binary with that value in its
// environment, the oracles of a sweep.
const StaticPrefix = "GOMAXPROCS="

// Static returns the static variant GOMAXPROCS=n.
func Static(n int) Variant {
	name := StaticPrefix + strconv.Itoa(n)
	return Variant{Name: name, Cmd: "cmd/runtime", Env: []string{name}, Doc: "a fixed " + name + " in the environment"}
}

// IsStatic reports whether v is a static variant.
func (v Variant) IsStatic() bool { return IsStatic(v.Name) }

// IsStatic reports whether name is a static variant's.
func IsStatic(name string) bool { return strings.HasPrefix(name, StaticPrefix) }

// Statics returns the static variants GOMAXPROCS=1 to GOMAXPROCS=ncpu.
func Statics(ncpu int) []Variant {
	var out []Variant
	for n := 1; n <= ncpu; n++ {
		out = append(out, Static(n))
	}
	return out
}

// Sweep returns a sweep's variants: All, the rules not in All, and the static
// oracles up to ncpu.
func Sweep(ncpu int) []Variant {
	out := slices.Clone(All)
	for _, r := range Rules {
		if !slices.ContainsFunc(out, func(v Variant) bool { return v.Name == r.Name }) {
			out = append(out, r)
		}
	}
	return append(out, Statics(ncpu)...)
}

// Names returns the names of All and of the other rules.
func Names() []string {
	var out []string
	for _, v := range append(append(slices.Clone(All), Rules...), extra()...) {
		if !slices.Contains(out, v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}

// Lookup returns the variant called name: one of All or Rules,
// GOMAXPROCS=n for n ≥ 1, or oracle-r for a ratio 0 < r ≤ 1.2.
func Lookup(name string) (Variant, bool) {
	for _, v := range append(append(slices.Clone(All), Rules...), extra()...) {
		if v.Name == name {
			return v, true
		}
	}
	if s, ok := strings.CutPrefix(name, StaticPrefix); ok {
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && strconv.Itoa(n) == s {
			return Static(n), true
		}
	}
	if s, ok := strings.CutPrefix(name, OraclePrefix); ok {
		if r, err := strconv.ParseFloat(s, 64); err == nil && r > 0 && r <= 1.2 {
			if v := OracleAt(r); v.Name == name {
				return v, true
			}
		}
	}
	return Variant{}, false
}

// Parse parses a comma-separated list of variant names; "all" means All,
// "static" the static variants up to ncpu, "sweep" Sweep(ncpu); "" is All.
func Parse(list string, ncpu int) ([]Variant, error) {
	if list = strings.TrimSpace(list); list == "" || list == "all" {
		return All, nil
	}
	var out []Variant
	add := func(v Variant) error {
		for _, o := range out {
			if o.Name == v.Name {
				return fmt.Errorf("variant %q listed twice", v.Name)
			}
		}
		out = append(out, v)
		return nil
	}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		var vs []Variant
		switch n {
		case "all":
			vs = All
		case "static":
			vs = Statics(ncpu)
		case "sweep":
			vs = Sweep(ncpu)
		default:
			v, ok := Lookup(n)
			if !ok {
				return nil, fmt.Errorf("unknown variant %q (known: %s, GOMAXPROCS=n, oracle-r, all, static, sweep)", n, strings.Join(Names(), ", "))
			}
			vs = []Variant{v}
		}
		for _, v := range vs {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// HeadroomEnv returns v's environment as an oracle: GOMEMLIMIT = v.Ratio (0:
// 0.9) × (memory − others), in bytes; nothing without a memory limit or when
// the others hold it all.
func (v Variant) HeadroomEnv(memory, others int64) []string {
	if memory <= 0 || others >= memory {
		return nil
	}
	r := v.Ratio
	if r == 0 {
		r = 0.9
	}
	return []string{"GOMEMLIMIT=" + strconv.FormatInt(int64(r*float64(memory-others)), 10)}
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
