package envvar

import (
	"fmt"
	"strconv"
	"strings"
)

// MemoryLimitVar is the environment variable of an explicit memory limit:
// bytes, as the Kubernetes downward API writes limits.memory with
// resourceFieldRef divisor "1".
const MemoryLimitVar = "FITGO_MEMORY_LIMIT"

// MemoryLimit parses the value of FITGO_MEMORY_LIMIT: a positive decimal
// number of bytes, white space around it ignored; "" is none (0).
func MemoryLimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || t[0] == '+' {
		return 0, fmt.Errorf("%s: %q: want a positive number of bytes", MemoryLimitVar, Short(s))
	}
	return v, nil
}
