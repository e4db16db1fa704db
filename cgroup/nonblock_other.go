//go:build !unix

package cgroup

const oNonblock = 0
