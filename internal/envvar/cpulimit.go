package envvar

import (
	"fmt"
	"strings"
)

// CPULimitVar is the environment variable of an explicit CPU limit.
const CPULimitVar = "FITGO_CPU_LIMIT"

// CPULimit parses the value of FITGO_CPU_LIMIT into millicores: cores with
// a decimal point (1.5, 0.5, 2.0) or millicores with an m (1500m), white
// space around it ignored; "" is none (0). A bare integer is millicores, as
// the downward API writes limits.cpu with divisor 1m (1500), and must be at
// least 1000: a smaller one may be whole cores, as the default divisor 1
// writes them, so it is an error. So are 0, any other unit and anything a
// Quantity is not.
func CPULimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	num, milli := strings.CutSuffix(t, "m")
	bare := !milli && !strings.Contains(t, ".")
	if bare {
		t += "m"
	}
	n, ok := Quantity(t, 1000)
	switch {
	case ok && bare && n > 0 && n < 1000:
		return 0, fmt.Errorf("%s: %q: a bare integer is millicores, and below 1000 it may be whole cores: write %dm for millicores or %d.0 for cores", CPULimitVar, Short(s), n, n)
	case ok && n > 0 && strings.Trim(num, "0123456789.") == "":
		return n, nil
	}
	return 0, fmt.Errorf("%s: %q: want a positive number of cores (1.5) or millicores (1500m, or 1500 as the downward API writes limits.cpu with divisor 1m)", CPULimitVar, Short(s))
}
