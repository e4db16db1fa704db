package fitgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// EnvVar is the environment variable that configures the blank import; see
// the package documentation.
const EnvVar = "FITGO"

// Report is what the blank import did at start-up.
type Report struct {
	// Setting is the value of FITGO at start-up, "" when unset.
	Setting string
	// SettingErr reports the fields of FITGO that were not understood and
	// were skipped; nil when there were none.
	SettingErr error
	// MaxProcs is the result of maxprocs.Apply. When FITGO turned it off,
	// only Before, After and Reason are set.
	MaxProcs maxprocs.Result
	// MemLimit is the result of memlimit.Apply. When FITGO turned it off,
	// only Before, After and Reason are set.
	MemLimit memlimit.Result
	// Err is a panic recovered at start-up. It would be a bug in fitgo: the
	// runtime is then left as the panic found it, and the program runs on.
	Err error
}

var report Report

func init() {
	report = start(deps{
		getenv:   os.Getenv,
		maxprocs: maxprocs.Apply,
		memlimit: memlimit.Apply,
		log:      slog.Default,
	})
}

// Results returns what the blank import did at start-up. Status on its
// results gives the live state of the refresh loop.
func Results() Report {
	return report
}

// deps are the blank import's links to the world, replaced in tests.
type deps struct {
	getenv   func(string) string
	maxprocs func(...maxprocs.Option) (maxprocs.Result, error)
	memlimit func(...memlimit.Option) (memlimit.Result, error)
	log      func() *slog.Logger // the logger of the one start-up line
}

// start applies both knobs as the blank import does. It never panics.
func start(d deps) (rep Report) {
	defer func() {
		if p := recover(); p != nil {
			rep.Err = fmt.Errorf("fitgo: recovered from a panic at start-up: %v", p)
		}
	}()
	rep.Setting = d.getenv(EnvVar)
	cfg, err := envvar.FITGO(rep.Setting)
	rep.SettingErr = err

	// The packages log refresh events (changes, hand-overs) to whatever
	// slog.Default is when they happen, once the program has had a chance to
	// configure logging; at start-up this function logs one line itself.
	var armed atomic.Bool
	logger := slog.New(&laterHandler{armed: &armed})

	if cfg.MaxProcs {
		opts := []maxprocs.Option{maxprocs.WithLogger(logger), maxprocs.WithKeepExisting()}
		for _, r := range []maxprocs.Rounding{maxprocs.Floor, maxprocs.Ceil, maxprocs.Nearest} {
			if r.String() == cfg.Rounding {
				opts = append(opts, maxprocs.WithRounding(r))
			}
		}
		if cfg.Refresh {
			opts = append(opts, maxprocs.WithRefresh(context.Background(), cfg.Interval))
		}
		rep.MaxProcs, _ = d.maxprocs(opts...)
	} else {
		n := runtime.GOMAXPROCS(0)
		rep.MaxProcs = maxprocs.Result{Before: n, After: n, Policy: maxprocs.Policy{Min: 1}, Reason: "turned off by " + EnvVar + "=" + rep.Setting}
	}
	if cfg.MemLimit {
		opts := []memlimit.Option{memlimit.WithLogger(logger), memlimit.WithKeepExisting()}
		if cfg.Refresh {
			opts = append(opts, memlimit.WithRefresh(context.Background(), cfg.Interval))
		}
		rep.MemLimit, _ = d.memlimit(opts...)
	} else {
		n := debug.SetMemoryLimit(-1)
		rep.MemLimit = memlimit.Result{Before: n, After: n, Policy: memlimit.DefaultPolicy(), Reason: "turned off by " + EnvVar + "=" + rep.Setting}
	}
	logStart(d.log(), rep)
	armed.Store(true)
	return rep
}

// logStart writes the start-up line: one Info line when something changed,
// otherwise a Debug line (which the default logger drops), never a warning:
// running outside a container is normal.
func logStart(l *slog.Logger, rep Report) {
	if l == nil {
		return
	}
	args := []any{"GOMAXPROCS", rep.MaxProcs, "GOMEMLIMIT", rep.MemLimit}
	if rep.SettingErr != nil {
		args = append(args, "setting_err", rep.SettingErr.Error())
	}
	if rep.Err != nil {
		args = append(args, "err", rep.Err.Error())
	}
	if rep.MaxProcs.Changed || rep.MemLimit.Changed {
		l.Info("fitgo: fitted the Go runtime to the container", args...)
		return
	}
	l.Debug("fitgo: nothing to change", args...)
}

// Stop stops following the limits, leaving GOMAXPROCS and GOMEMLIMIT as
// they are.
func (r Report) Stop() {
	r.MaxProcs.Stop()
	r.MemLimit.Stop()
}

// Undo stops following the limits and restores GOMAXPROCS and GOMEMLIMIT to
// their state before the blank import, where fitgo's values are still in
// force (see maxprocs.Result.Undo and memlimit.Result.Undo).
func (r Report) Undo() {
	r.MaxProcs.Undo()
	r.MemLimit.Undo()
}

// LogValue makes a Report log as a group of both results.
func (r Report) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Any("GOMAXPROCS", r.MaxProcs),
		slog.Any("GOMEMLIMIT", r.MemLimit),
	}
	if r.Setting != "" {
		attrs = append(attrs, slog.String("setting", r.Setting))
	}
	if err := errors.Join(r.SettingErr, r.Err); err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	return slog.GroupValue(attrs...)
}
