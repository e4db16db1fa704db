//go:build linux

package cgroup

import "os"

// Read returns the effective limits of the calling process: ReadFS of the
// real file system, os.DirFS("/"). See ReadFS for the errors.
func Read() (Limits, error) {
	return ReadFS(os.DirFS("/"))
}

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup:
// ReadCPUStatFS of os.DirFS("/").
func ReadCPUStat() (CPUStat, error) {
	return ReadCPUStatFS(os.DirFS("/"))
}
