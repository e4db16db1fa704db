package cgroup

// TEMPORARY: signatures of the contract; the cgroup helper replaces this file
// with the implementation (read.go, watcher.go, cpustat.go, ...) and deletes it.

import (
	"errors"
	"io/fs"
	"time"
)

var errTODO = errors.New("cgroup: not implemented yet")

// Read returns the effective limits of the calling process.
func Read() (Limits, error) { return Limits{}, errTODO }

// ReadFS returns the effective limits of the calling process, reading
// proc/self/cgroup, proc/self/mountinfo and the cgroup files from fsys rooted at "/".
func ReadFS(fsys fs.FS) (Limits, error) { return Limits{}, errTODO }

// CPUStat is the normalised content of cpu.stat.
type CPUStat struct {
	Periods          uint64        // nr_periods
	ThrottledPeriods uint64        // nr_throttled
	ThrottledTime    time.Duration // throttled_time (v1, ns) or throttled_usec (v2)
	Usage            time.Duration // usage_usec (v2) or cpuacct.usage (v1, when co-mounted); valid when HasUsage
	HasUsage         bool
}

// Sub returns s - prev, field by field.
func (s CPUStat) Sub(prev CPUStat) CPUStat { return CPUStat{} }

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup.
func ReadCPUStat() (CPUStat, error) { return CPUStat{}, errTODO }

// ReadCPUStatFS is ReadCPUStat on fsys rooted at "/".
func ReadCPUStatFS(fsys fs.FS) (CPUStat, error) { return CPUStat{}, errTODO }

// ReadCPUStatDir reads cpu.stat in the absolute directory dir of fsys.
func ReadCPUStatDir(fsys fs.FS, dir string) (CPUStat, error) { return CPUStat{}, errTODO }

// Watcher keeps the limit files of the process's hierarchy open and re-reads
// them without allocating.
type Watcher struct{}

// NewWatcher discovers the hierarchy like ReadFS and opens its limit files.
func NewWatcher(fsys fs.FS) (*Watcher, error) { return nil, errTODO }

// Read re-reads the open files: the same result as ReadFS, with no allocation
// when no error occurs.
func (w *Watcher) Read() (Limits, error) { return Limits{}, errTODO }

// Close closes the files.
func (w *Watcher) Close() error { return nil }
