package envvar

import (
	"fmt"
	"strings"
)

// MemoryLimitVar is the environment variable of an explicit memory limit:
// bytes, as the Kubernetes downward API writes limits.memory with
// resourceFieldRef divisor "1" (the default).
const MemoryLimitVar = "FITGO_MEMORY_LIMIT"

// MemoryLimit parses the value of FITGO_MEMORY_LIMIT: a Quantity of bytes
// (536870912, 512Mi, 1G), white space around it ignored; "" is none (0).
// Below 1 MiB, 0 included, is an error: no such memory limit exists (the
// downward API writes a container without one the node's allocatable
// memory), and a divisor other than "1" writes another unit (512 for 1Mi).
func MemoryLimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if v, ok := Quantity(t, 1); ok && v >= 1<<20 {
		return v, nil
	}
	return 0, fmt.Errorf("%s: %q: want bytes, at least 1Mi, such as 536870912 or 512Mi", MemoryLimitVar, Short(s))
}

// Short is s cut to 40 bytes, as the errors quote it: a malformed value
// cannot make a huge log line.
func Short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
