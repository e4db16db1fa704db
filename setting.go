package fitgo

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

const (
	envVar         = "FITGO"     // the variable that configures the blank import
	defaultRefresh = time.Second // the cadence at which the Go runtime (1.25 and later) re-reads the CPU limit itself
	maxErrs        = 3           // how many bad fields FITGO's error names, each cut by envvar.Short
)

// setting is the blank import's configuration from FITGO: the Options of
// both knobs, which of them are on, and the refresh interval.
type setting struct {
	maxprocs, memlimit bool          // the knobs that are on (maxprocs=off, memlimit=off)
	every              time.Duration // the refresh interval; 0: no refresh (refresh=off)
	mp                 maxprocs.Options
	ml                 memlimit.Options
}

// parseFITGO parses the value of FITGO as the package doc describes it:
// comma-separated fields, like GODEBUG, spaces around them ignored, later ones
// overriding earlier ones, empty ones skipped; err names those not understood.
func parseFITGO(s string) (c setting, err error) {
	c = setting{maxprocs: true, memlimit: true, every: defaultRefresh}
	headroom, guard, nonGo := true, true, true
	switches := map[string]*bool{"maxprocs": &c.maxprocs, "memlimit": &c.memlimit, "headroom": &headroom, "leakguard": &guard, "nongo": &nonGo}
	var errs []error
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		key, value, ok := strings.Cut(field, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		bad := ""
		switch on, off, sw := value == "on", value == "off", switches[key]; {
		case field == "":
		case field == "off":
			c.maxprocs, c.memlimit = false, false
		case !ok:
			bad = "want off or key=value"
		case sw != nil && (on || off):
			*sw = on
		case sw != nil:
			bad = "want on or off"
		case key == "refresh" && off:
			c.every = 0
		case key == "refresh" && on:
			c.every = defaultRefresh
		case key == "refresh":
			bad = "want off, on or a positive duration such as 500ms"
			if d, perr := time.ParseDuration(value); perr == nil && d > 0 {
				c.every, bad = d, ""
			}
		case key == "rounding":
			bad = "want floor, ceil or nearest"
			for r := maxprocs.Floor; r <= maxprocs.Nearest; r++ { // a Policy's String begins with its rounding's name
				if name, _, _ := strings.Cut(maxprocs.Policy{Rounding: r}.String(), ","); name == value {
					c.mp.Rounding, bad = r, ""
				}
			}
		case key == "insist" && (on || off || value == "maxprocs" || value == "memlimit"):
			c.mp.Insist, c.ml.Insist = on || value == "maxprocs", on || value == "memlimit"
		case key == "insist":
			bad = "want on, off, maxprocs or memlimit"
		case key == "gc" && (value == "auto" || off):
			c.ml.GC = value == "auto"
		case key == "gc":
			bad = "want auto or off"
		case key == "gcshare":
			bad = "want a share of the available memory above 0 and at most 0.9, such as 0.7"
			if v, perr := strconv.ParseFloat(value, 64); perr == nil && v > 0 && v <= 0.9 {
				c.ml.GCShare, bad = v, ""
			}
		case key == "oomprofile":
			bad = "want an absolute directory path"
			if filepath.IsAbs(value) {
				c.ml.OOMProfile, bad = value, ""
			}
		case key == "reserve":
			bad = "want a quantity of bytes such as 64Mi or 67108864"
			if v, qok := envvar.Quantity(value, 1); qok {
				c.ml.Reserve, bad = v, ""
			}
		default: // the key says it all: quote it alone, keeping the error short
			errs = append(errs, fmt.Errorf("FITGO: unknown setting %q (want maxprocs, memlimit, refresh, rounding, insist, headroom, leakguard, nongo, gc, gcshare, reserve or oomprofile)", envvar.Short(key)))
		}
		if bad != "" {
			errs = append(errs, fmt.Errorf("FITGO: %q: %s", envvar.Short(field), bad))
		}
	}
	if c.every > 0 {
		c.every = knob.Interval(c.every)
	}
	c.mp.KeepExisting, c.ml.KeepExisting = !c.mp.Insist, !c.ml.Insist // insisting: fitgo's value wins over an earlier one too
	c.ml.NoHeadroom, c.ml.NoLeakGuard, c.ml.NoNonGo = !headroom, !guard, !nonGo
	if len(errs) > maxErrs {
		errs = append(errs[:maxErrs], fmt.Errorf("FITGO: and %d more fields not understood", len(errs)-maxErrs))
	}
	return c, errors.Join(errs...)
}
