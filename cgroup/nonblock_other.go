//go:build !unix

package cgroup

// oNonblock is 0 where there are no cgroups to read.
const oNonblock = 0
