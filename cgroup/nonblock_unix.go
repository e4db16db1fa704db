//go:build unix

package cgroup

import "syscall"

const oNonblock = syscall.O_NONBLOCK
