//go:build !linux

package workload

// maxRSSBytes converts ru_maxrss (bytes on Darwin and the BSDs' Go ports as
// reported by syscall) to bytes.
func maxRSSBytes(v int64) int64 { return v }
