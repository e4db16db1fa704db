package memlimit

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
)

// The defaults of the zero Policy.
const (
	// defaultRatio leaves 10% of the limit to what the Go runtime does not
	// count (the binary, cgo, kernel buffers) and to a GC cycle's overshoot.
	defaultRatio = 0.9
	// defaultMin: below it the heap has a few MiB next to the runtime's own
	// memory, and a soft limit only keeps the GC busy without preventing the
	// OOM kill.
	defaultMin = 16 << 20
)

// Policy turns a memory limit into a GOMEMLIMIT value: the lower of Ratio ×
// limit and limit − Margin, rounded down to a byte. When that is below Min
// (or not positive), GOMEMLIMIT is left unset rather than raised: unlike
// automemlimit's WithMin, no setting puts a soft limit above what the
// container allows. The zero Policy is fitgo's default.
type Policy struct {
	// Ratio is the fraction of the limit to use, in (0, 1]; 0 means 0.9.
	Ratio float64
	// Margin is at least this many bytes kept free between GOMEMLIMIT and
	// the limit; with the ratio, the lower result wins. 0: none.
	Margin int64
	// Min is the smallest GOMEMLIMIT to set; a smaller result leaves
	// GOMEMLIMIT unset. 0 means 16 MiB; a negative Min sets any positive
	// result.
	Min int64
}

// resolved returns p with its defaults filled in.
func (p Policy) resolved() Policy {
	if p.Ratio == 0 {
		p.Ratio = defaultRatio
	}
	if p.Min == 0 {
		p.Min = defaultMin
	}
	return p
}

// SoftLimit returns GOMEMLIMIT for a memory limit of limit bytes, or 0 when
// the policy leaves GOMEMLIMIT unset for it. It is a pure function and
// assumes a valid Policy (Apply checks it).
func (p Policy) SoftLimit(limit int64) int64 {
	p = p.resolved()
	v := p.raw(limit)
	if v <= 0 || v < p.Min {
		return 0
	}
	return v
}

// raw is the result of both rules, before Min; it may be <= 0.
func (p Policy) raw(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	v := limit
	if f := math.Floor(float64(limit) * p.Ratio); f < float64(limit) {
		v = int64(f)
	}
	if p.Margin > 0 {
		v = min(v, limit-p.Margin)
	}
	return v
}

// validate reports whether the Policy can be applied.
func (p Policy) validate() error {
	var errs []error
	if !(p.Ratio > 0 && p.Ratio <= 1) && p.Ratio != 0 {
		errs = append(errs, fmt.Errorf("ratio %v: want 0 < ratio <= 1", p.Ratio))
	}
	if p.Margin < 0 {
		errs = append(errs, fmt.Errorf("negative margin %d", p.Margin))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memlimit: invalid policy: %w", err)
	}
	return nil
}

// String describes the policy with its defaults filled in, as Status and log
// lines show it, e.g. "ratio 0.9, min 16 MiB" or "ratio 1, margin 256 MiB".
func (p Policy) String() string {
	p = p.resolved()
	s := "ratio " + strconv.FormatFloat(p.Ratio, 'f', -1, 64)
	if p.Margin > 0 {
		s += ", margin " + formatBytes(p.Margin)
	}
	if p.Min > 0 {
		s += ", min " + formatBytes(p.Min)
	}
	return s
}

// logBytes is n for a log line: readable with the number beside it,
// "460.8 MiB (483183820 bytes)", or "no limit".
func logBytes(n int64) slog.Value {
	if n == noLimit {
		return slog.StringValue(formatBytes(n))
	}
	return slog.StringValue(formatBytes(n) + " (" + strconv.FormatInt(n, 10) + " bytes)")
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
