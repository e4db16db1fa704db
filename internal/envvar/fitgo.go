package envvar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fitgo is the blank import's configuration from the FITGO environment
// variable. The knobs' options of the same names say what each does.
type Fitgo struct {
	MaxProcs bool          // set GOMAXPROCS (maxprocs=off turns it off)
	MemLimit bool          // set GOMEMLIMIT (memlimit=off turns it off)
	Refresh  bool          // follow limit changes (refresh=off turns it off)
	Interval time.Duration // refresh interval; 0 means the default
	Rounding string        // GOMAXPROCS rounding: "" (the default), "floor", "ceil" or "nearest"

	InsistMaxProcs, InsistMemLimit bool // insist=on, maxprocs or memlimit
	NoHeadroom                     bool // headroom=off
	NoLeakGuard                    bool // leakguard=off
	NoNonGo                        bool // nongo=off
	GC                             bool // gc=auto: memlimit's GC policy

	Reserve int64 // reserve=<bytes>: memory others hold where fitgo cannot see it
}

// Roundings are the names of the GOMAXPROCS roundings, in the order of
// maxprocs.Rounding from 1 (Floor).
var Roundings = [...]string{"floor", "ceil", "nearest"}

// FITGO parses the value of FITGO, whose fields the package doc of fitgo
// lists: comma-separated, like GODEBUG. Spaces around fields are ignored,
// later fields override earlier ones, and empty fields are skipped. A field
// that cannot be understood is skipped and reported in err (at most maxErrs
// of them, each cut to maxField bytes); the other fields still apply.
func FITGO(s string) (f Fitgo, err error) {
	f = Fitgo{MaxProcs: true, MemLimit: true, Refresh: true}
	headroom, guard, nonGo := true, true, true
	switches := map[string]*bool{"maxprocs": &f.MaxProcs, "memlimit": &f.MemLimit, "refresh": &f.Refresh,
		"headroom": &headroom, "leakguard": &guard, "nongo": &nonGo}
	var errs []error
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		key, value, ok := strings.Cut(field, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var bad, unknown string
		switch on, sw := value == "on", switches[key]; {
		case field == "":
		case field == "off":
			f.MaxProcs, f.MemLimit = false, false
		case !ok:
			bad = "want off or key=value"
		case key == "rounding":
			if !slices.Contains(Roundings[:], value) {
				bad = "want floor, ceil or nearest"
			} else {
				f.Rounding = value
			}
		case key == "insist":
			if value != "on" && value != "off" && value != "maxprocs" && value != "memlimit" {
				bad = "want on, off, maxprocs or memlimit"
			} else {
				f.InsistMaxProcs, f.InsistMemLimit = on || value == "maxprocs", on || value == "memlimit"
			}
		case key == "gc":
			if value != "auto" && value != "off" {
				bad = "want auto or off"
			} else {
				f.GC = value == "auto"
			}
		case key == "reserve":
			if v, qok := Quantity(value, 1); qok {
				f.Reserve = v
			} else {
				bad = "want a quantity of bytes such as 64Mi or 67108864"
			}
		case sw == nil:
			unknown = key
		case on || value == "off":
			*sw = on
			if key == "refresh" {
				f.Interval = 0
			}
		case key != "refresh":
			bad = "want on or off"
		default:
			if d, perr := time.ParseDuration(value); perr == nil && d > 0 {
				f.Refresh, f.Interval = true, d
			} else {
				bad = "want off, on or a positive duration such as 500ms"
			}
		}
		switch {
		case unknown != "": // the key says it all: quote it alone, keeping the error short
			errs = append(errs, fmt.Errorf("FITGO: unknown setting %q (want maxprocs, memlimit, refresh, rounding, insist, headroom, leakguard, nongo, gc or reserve)", Short(unknown)))
		case bad != "":
			errs = append(errs, fmt.Errorf("FITGO: %q: %s", Short(field), bad))
		}
	}
	f.NoHeadroom, f.NoLeakGuard, f.NoNonGo = !headroom, !guard, !nonGo
	if len(errs) > maxErrs {
		errs = append(errs[:maxErrs], fmt.Errorf("FITGO: and %d more fields not understood", len(errs)-maxErrs))
	}
	return f, errors.Join(errs...)
}

// maxErrs is how many bad fields FITGO's error names; maxField is how much
// of each it quotes: a malformed value cannot make a huge log line.
const (
	maxErrs  = 3
	maxField = 40
)

// Short is field cut to maxField bytes, as FITGO's errors quote it.
func Short(field string) string {
	if len(field) > maxField {
		return field[:maxField] + "..."
	}
	return field
}
