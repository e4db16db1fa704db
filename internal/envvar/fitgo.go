package envvar

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Fitgo is the blank import's configuration from the FITGO environment variable.
type Fitgo struct {
	MaxProcs bool          // set GOMAXPROCS (maxprocs=off turns it off)
	MemLimit bool          // set GOMEMLIMIT (memlimit=off turns it off)
	Refresh  bool          // follow limit changes (refresh=off turns it off)
	Interval time.Duration // refresh interval; 0 means the default
	Rounding string        // GOMAXPROCS rounding: "" (the default), "floor", "ceil" or "nearest"
}

// FITGO parses the value of the FITGO environment variable: a comma-separated
// list of fields, like GODEBUG.
//
//	off                 do nothing at all (same as maxprocs=off,memlimit=off)
//	maxprocs=off|on     leave GOMAXPROCS alone, or manage it (default on)
//	memlimit=off|on     leave GOMEMLIMIT alone, or manage it (default on)
//	refresh=off|on      apply once at start-up only, or follow changes (default on)
//	refresh=<duration>  follow changes at this interval, e.g. refresh=250ms
//	rounding=<rule>     round the CPU limit for GOMAXPROCS by floor, ceil or nearest
//
// Spaces around fields are ignored, later fields override earlier ones, and
// empty fields are skipped. A field that cannot be understood is skipped and
// reported in err; the other fields still apply, so a typo never turns fitgo
// into something the user did not ask for beyond that one field.
func FITGO(s string) (f Fitgo, err error) {
	f = Fitgo{MaxProcs: true, MemLimit: true, Refresh: true}
	var errs []error
	for s != "" {
		var field string
		field, s, _ = strings.Cut(s, ",")
		field = strings.TrimSpace(field)
		q := short(field)
		if field == "" {
			continue
		}
		if field == "off" {
			f.MaxProcs, f.MemLimit = false, false
			continue
		}
		key, value, ok := strings.Cut(field, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok {
			errs = append(errs, fmt.Errorf("FITGO: %q: want off or key=value", q))
			continue
		}
		switch key {
		case "maxprocs", "memlimit", "refresh":
		case "rounding":
			switch value {
			case "floor", "ceil", "nearest":
				f.Rounding = value
			default:
				errs = append(errs, fmt.Errorf("FITGO: %q: want floor, ceil or nearest", q))
			}
			continue
		default:
			errs = append(errs, fmt.Errorf("FITGO: %q: unknown setting %q (want maxprocs, memlimit, refresh or rounding)", q, short(key)))
			continue
		}
		switch value {
		case "on", "off":
			on := value == "on"
			switch key {
			case "maxprocs":
				f.MaxProcs = on
			case "memlimit":
				f.MemLimit = on
			case "refresh":
				f.Refresh, f.Interval = on, 0
			}
			continue
		}
		if key == "refresh" {
			d, perr := time.ParseDuration(value)
			if perr == nil && d > 0 {
				f.Refresh, f.Interval = true, d
				continue
			}
			errs = append(errs, fmt.Errorf("FITGO: %q: want off, on or a positive duration such as 500ms", q))
			continue
		}
		errs = append(errs, fmt.Errorf("FITGO: %q: want on or off", q))
	}
	if len(errs) > maxErrs {
		errs = append(errs[:maxErrs], fmt.Errorf("FITGO: and %d more fields not understood", len(errs)-maxErrs))
	}
	return f, errors.Join(errs...)
}

// maxErrs is how many bad fields FITGO's error names; maxField is how much
// of each it quotes. A malformed value cannot make a huge log line.
const (
	maxErrs  = 3
	maxField = 40
)

// short is field, cut to maxField bytes.
func short(field string) string {
	if len(field) > maxField {
		return field[:maxField] + "..."
	}
	return field
}
