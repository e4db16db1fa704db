package workload

// maxRSSBytes converts ru_maxrss (KiB on Linux) to bytes.
func maxRSSBytes(v int64) int64 { return v << 10 }
