package memlimit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Defaults of DefaultPolicy.
const (
	// DefaultRatio leaves 10% of the container's memory to what the Go
	// runtime does not count (the binary's text, cgo and C libraries,
	// kernel-side buffers) and to the overshoot of a concurrent GC cycle.
	DefaultRatio = 0.9
	// DefaultMinLimit is the smallest GOMEMLIMIT fitgo sets by default. The
	// runtime's own memory, before any heap, is about 5 MiB (an idle net/http
	// server accounts 4.8 MiB against its memory limit with 0.1 MiB of heap,
	// Go 1.26), and the binary's text takes about as much of the container's
	// memory. Below 16 MiB a soft limit leaves the heap a few MiB: the GC then
	// runs back to back (up to the runtime's 50% CPU cap) and still does not
	// prevent the OOM kill. fitgo leaves GOMEMLIMIT unset there and says so,
	// so such a process fails fast rather than limping.
	DefaultMinLimit = 16 << 20
)

// Policy turns a memory limit into a GOMEMLIMIT value. Start from
// DefaultPolicy; a zero Ratio is invalid.
//
// The value is the lower of Ratio × limit and limit − Reserve, rounded down
// to a byte. It is never above the limit. When it is below MinLimit (or not
// positive), GOMEMLIMIT is left unset rather than raised: unlike
// automemlimit's WithMin, no option sets a soft limit above what the
// container allows.
type Policy struct {
	// Ratio is the fraction of the limit to use, in (0, 1].
	Ratio float64
	// Reserve is a number of bytes kept free below the limit; 0 for none.
	Reserve int64
	// MinLimit is the smallest GOMEMLIMIT to set; a smaller result leaves
	// GOMEMLIMIT unset. 0 sets any positive result.
	MinLimit int64
}

// DefaultPolicy returns the default policy: Ratio 0.9, no Reserve, MinLimit
// 16 MiB.
func DefaultPolicy() Policy {
	return Policy{Ratio: DefaultRatio, MinLimit: DefaultMinLimit}
}

// Limit returns GOMEMLIMIT for a memory limit of limit bytes, or 0 when the
// policy leaves GOMEMLIMIT unset for it (the result would be below MinLimit
// or not positive). It is a pure function and assumes a valid Policy.
func (p Policy) Limit(limit int64) int64 {
	v := p.raw(limit)
	if v <= 0 || v < p.MinLimit {
		return 0
	}
	return v
}

// raw is the result of both rules, before MinLimit; it may be <= 0.
func (p Policy) raw(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	v := limit
	if f := math.Floor(float64(limit) * p.Ratio); f < float64(limit) {
		v = int64(f)
	}
	if p.Reserve > 0 {
		v = min(v, limit-p.Reserve)
	}
	return v
}

// Validate reports whether the Policy can be applied.
func (p Policy) Validate() error {
	var errs []error
	if !(p.Ratio > 0 && p.Ratio <= 1) {
		errs = append(errs, fmt.Errorf("ratio %v: want 0 < ratio <= 1", p.Ratio))
	}
	if p.Reserve < 0 {
		errs = append(errs, fmt.Errorf("negative reserve %d", p.Reserve))
	}
	if p.MinLimit < 0 {
		errs = append(errs, fmt.Errorf("negative minimum %d", p.MinLimit))
	}
	if len(errs) > 0 {
		return fmt.Errorf("memlimit: invalid policy: %w", errors.Join(errs...))
	}
	return nil
}

// String describes the policy, e.g. "ratio 0.9, min 16 MiB" or
// "ratio 1, reserve 256 MiB".
func (p Policy) String() string {
	var b strings.Builder
	b.WriteString("ratio ")
	b.WriteString(strconv.FormatFloat(p.Ratio, 'f', -1, 64))
	if p.Reserve > 0 {
		b.WriteString(", reserve ")
		b.WriteString(formatBytes(p.Reserve))
	}
	if p.MinLimit > 0 {
		b.WriteString(", min ")
		b.WriteString(formatBytes(p.MinLimit))
	}
	return b.String()
}

// formatBytes writes n for people, in the largest binary unit not above
// it, to one decimal: "512 MiB", "460.8 MiB", "123 B"; math.MaxInt64 is
// "no limit".
func formatBytes(n int64) string {
	if n == math.MaxInt64 {
		return "no limit"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n)
	i := 0
	for i < len(units)-1 && (f >= 1024 || f <= -1024) {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) + " " + units[i]
}
