package fitgo

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// envVar is the environment variable that configures the blank import.
const envVar = "FITGO"

// defaultRefresh is the blank import's refresh interval: the cadence at which
// the Go runtime (1.25 and later) re-reads the CPU limit itself.
const defaultRefresh = time.Second

// Report is what the blank import did at start-up, with the live handles of
// both knobs.
type Report struct {
	// Setting is the value of FITGO at start-up, "" when unset; SettingErr
	// names the fields that were not understood and were skipped.
	Setting    string
	SettingErr error
	// MaxProcs and MemLimit manage GOMAXPROCS and GOMEMLIMIT: Status says
	// what was done and what is in force now; Undo ends the management. nil
	// when FITGO turned the knob off (Status then reports the current value).
	MaxProcs *maxprocs.Fit
	MemLimit *memlimit.Fit
	// Err is a panic recovered at start-up. It would be a bug in fitgo: the
	// runtime is then left as the panic found it, and the program runs on.
	Err error
}

var report Report

func init() {
	report = start(deps{
		getenv:   envvar.Startup(),
		read:     cgroup.Read,
		maxprocs: maxprocs.Apply,
		memlimit: memlimit.Apply,
		loop: func(d time.Duration, mp func() maxprocs.Result) *knob.Loop {
			return knob.NewLoop(d, openHinted(nil, d, slog.Default, mp), nil)
		},
		log: slog.Default,
	})
}

// Startup returns what the blank import did at start-up.
func Startup() Report { return report }

// deps are the blank import's links to the world, replaced in tests.
type deps struct {
	getenv   func(string) string
	read     func() (cgroup.Limits, error)
	maxprocs func(maxprocs.Options) (*maxprocs.Fit, error)
	memlimit func(memlimit.Options) (*memlimit.Fit, error)
	loop     func(time.Duration, func() maxprocs.Result) *knob.Loop // its hint speaks of GOMAXPROCS as maxprocs fits it
	log      func() *slog.Logger                                    // the logger of the one start-up line
}

// start applies both knobs as the blank import does: it reads the limits
// once, hands them to both, and runs one refresh loop for the two. It never
// panics.
func start(d deps) (rep Report) {
	defer func() {
		if p := recover(); p != nil {
			rep.Err = fmt.Errorf("fitgo: recovered from a panic at start-up: %v", p)
		}
	}()
	rep.Setting = d.getenv(envVar)
	cfg, err := envvar.FITGO(rep.Setting)
	rep.SettingErr = err

	// The packages log refresh events (changes, hand-overs) to whatever
	// slog.Default is when they happen, once the program has had a chance to
	// configure logging; at start-up this function logs one line itself.
	var armed atomic.Bool
	logger := slog.New(&laterHandler{armed: &armed})
	ctx, every := context.Background(), time.Duration(0)
	var mp atomic.Pointer[maxprocs.Fit] // the hint's, once Apply returned
	if cfg.Refresh {
		every = knob.Interval(cmp.Or(cfg.Interval, defaultRefresh))
		ctx = knob.WithLoop(ctx, d.loop(every, func() maxprocs.Result { return mp.Load().Status() }))
	}
	var shared *cgroup.Limits
	if cfg.MaxProcs || cfg.MemLimit {
		// The controllers' errors are in lim. An error of the whole reading
		// (no cgroup at all, say) is not: then each knob reads again and
		// reports it.
		if lim, err := d.read(); err == nil || lim.CPU.Version != 0 || lim.Memory.Version != 0 {
			shared = &lim
		}
	}
	if cfg.MaxProcs {
		o := maxprocs.Options{KeepExisting: !cfg.InsistMaxProcs, Insist: cfg.InsistMaxProcs, Logger: logger, Refresh: every, Context: ctx, Limits: shared}
		o.Rounding = maxprocs.Rounding(slices.Index(envvar.Roundings[:], cfg.Rounding) + 1) // "": the default
		rep.MaxProcs, _ = d.maxprocs(o)
		mp.Store(rep.MaxProcs)
	}
	if cfg.MemLimit {
		rep.MemLimit, _ = d.memlimit(memlimit.Options{KeepExisting: !cfg.InsistMemLimit, Insist: cfg.InsistMemLimit,
			Logger: logger, Refresh: every, Context: ctx, Limits: shared, NoHeadroom: cfg.NoHeadroom,
			NoLeakGuard: cfg.NoLeakGuard, NoNonGo: cfg.NoNonGo, Reserve: cfg.Reserve, GC: cfg.GC})
	}
	logStart(d.log(), rep, status(cfg.MaxProcs, rep.MaxProcs.Status), status(cfg.MemLimit, rep.MemLimit.Status))
	armed.Store(true)
	return rep
}

// logStart writes the start-up line: one Info line when something changed,
// otherwise a Debug line (which the default logger drops), never a warning
// for running outside a container, which is normal; but a Warn line when
// FITGO, FITGO_CPU_LIMIT or FITGO_MEMORY_LIMIT was not understood (the packages' own Warn is
// dropped at start-up). A knob's Result is nil when FITGO turned it off.
func logStart(l *slog.Logger, rep Report, mp *maxprocs.Result, ml *memlimit.Result) {
	if l == nil {
		return
	}
	k := knobs(mp, ml)
	args := []any{k[0], k[1]}
	if rep.SettingErr != nil {
		args = append(args, "setting_err", rep.SettingErr.Error())
	}
	if rep.Err != nil {
		args = append(args, "err", rep.Err.Error())
	}
	level, msg := slog.LevelDebug, "fitgo: nothing to change"
	if mp != nil && mp.Changed || ml != nil && ml.Changed {
		level, msg = slog.LevelInfo, "fitgo: fitted the Go runtime to the container"
	}
	if rep.SettingErr != nil || mp != nil && mp.SettingErr != nil || ml != nil && ml.SettingErr != nil {
		level = slog.LevelWarn
	}
	l.Log(context.Background(), level, msg, args...)
}

// status is a knob's Status for the log lines: nil when it is not on.
func status[R any](on bool, get func() R) *R {
	if !on {
		return nil
	}
	r := get()
	return &r
}

// knobs are the attributes of both knobs in the log lines: their Results
// or, where FITGO turned a knob off (its Result is nil), "off" and the value
// in force, which a Result of zeros would give as 0.
func knobs(mp *maxprocs.Result, ml *memlimit.Result) []slog.Attr {
	a := []slog.Attr{slog.Group("GOMAXPROCS", "fitgo", "off", "value", (*maxprocs.Fit)(nil).Status().After),
		slog.Group("GOMEMLIMIT", "fitgo", "off", "value", (*memlimit.Fit)(nil).Status().After)}
	if mp != nil {
		a[0] = slog.Any("GOMAXPROCS", *mp)
	}
	if ml != nil {
		a[1] = slog.Any("GOMEMLIMIT", *ml)
	}
	return a
}

// LogValue makes a Report log as a group of the live status of both knobs,
// with the setting cut as its errors quote it.
func (r Report) LogValue() slog.Value {
	attrs := knobs(status(r.MaxProcs != nil, r.MaxProcs.Status), status(r.MemLimit != nil, r.MemLimit.Status))
	if r.Setting != "" {
		attrs = append(attrs, slog.String("setting", envvar.Short(r.Setting)))
	}
	for _, err := range []error{r.SettingErr, r.Err} {
		if err != nil {
			attrs = append(attrs, slog.String("err", err.Error()))
		}
	}
	return slog.GroupValue(attrs...)
}
