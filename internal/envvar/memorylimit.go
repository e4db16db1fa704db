package envvar

import (
	"fmt"
	"strings"
)

// MemoryLimitVar is the environment variable of an explicit memory limit:
// bytes, as the Kubernetes downward API writes limits.memory with
// resourceFieldRef divisor "1" (the default).
const MemoryLimitVar = "FITGO_MEMORY_LIMIT"

// MemoryLimit parses the value of FITGO_MEMORY_LIMIT: a positive Quantity
// of bytes (536870912, 512Mi, 1G), white space around it ignored; "" is none
// (0). 0 is an error, as it is not a limit: the downward API writes a
// container without one the node's allocatable memory, never 0.
func MemoryLimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if v, ok := Quantity(t, 1); ok && v > 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%s: %q: want a positive number of bytes, such as 536870912 or 512Mi", MemoryLimitVar, Short(s))
}
