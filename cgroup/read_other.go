//go:build !linux

package cgroup

// Read returns the effective limits of the calling process. cgroups exist on
// Linux only: elsewhere Read returns ErrNoCgroup.
func Read() (Limits, error) {
	return Limits{}, ErrNoCgroup
}

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup.
// cgroups exist on Linux only: elsewhere it returns ErrNoCgroup.
func ReadCPUStat() (CPUStat, error) {
	return CPUStat{}, ErrNoCgroup
}
