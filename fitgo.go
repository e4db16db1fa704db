package fitgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

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
		loop: func(d time.Duration, mp func() maxprocs.Result, first <-chan func()) *knob.Loop {
			return knob.NewLoop(d, openHinted(nil, d, slog.Default, mp, first), nil)
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
	loop     func(time.Duration, func() maxprocs.Result, <-chan func()) *knob.Loop // see openHinted
	log      func() *slog.Logger                                                   // the logger of the start-up lines
}

// start applies both knobs as the blank import does: it reads the limits
// once, hands them to both, and runs one refresh loop for the two. It never
// panics. It logs the start-up lines at the loop's first reading or, with
// nothing for a loop to follow, at once.
func start(d deps) (rep Report) {
	first := make(chan func(), 1) // the start-up lines, for the loop's first reading
	defer close(first)
	defer func() {
		if p := recover(); p != nil {
			rep.Err = fmt.Errorf("fitgo: recovered from a panic at start-up: %v", p)
		}
	}()
	rep.Setting = d.getenv(envVar)
	cfg, err := parseFITGO(rep.Setting)
	rep.SettingErr = err

	var armed atomic.Bool // the packages log through laterHandler from the end of start-up on
	logger := slog.New(&laterHandler{armed: &armed})
	ctx := context.Background()
	var mp atomic.Pointer[maxprocs.Fit] // the hint's, once Apply returned
	if cfg.every > 0 {
		ctx = knob.WithLoop(ctx, d.loop(cfg.every, func() maxprocs.Result { return mp.Load().Status() }, first))
	}
	var shared *cgroup.Limits
	if cfg.maxprocs || cfg.memlimit {
		// The controllers' errors are in lim; an error of the whole reading
		// (no cgroup at all, say) is not, so each knob reads again for it.
		if lim, err := d.read(); err == nil || lim.CPU.Version != 0 || lim.Memory.Version != 0 {
			shared = &lim
		}
	}
	if o := &cfg.mp; cfg.maxprocs {
		o.Logger, o.Refresh, o.Context, o.Limits = logger, cfg.every, ctx, shared
		rep.MaxProcs, _ = d.maxprocs(*o)
		mp.Store(rep.MaxProcs)
	}
	if o := &cfg.ml; cfg.memlimit {
		o.Logger, o.Refresh, o.Context, o.Limits = logger, cfg.every, ctx, shared
		rep.MemLimit, _ = d.memlimit(*o)
	}
	procs, mem := status(cfg.maxprocs, rep.MaxProcs.Status), status(cfg.memlimit, rep.MemLimit.Status)
	lines := func() { logStart(d.log(), err, procs, mem) }
	if procs != nil && procs.Following || mem != nil && mem.Following {
		first <- lines
	} else {
		lines()
	}
	armed.Store(true)
	return rep
}

// laterHandler sends records to slog.Default's handler as it is when they
// are logged, not as it was at start-up, and drops them until armed: the
// blank import runs before main configures logging, and it writes its one
// start-up line itself.
type laterHandler struct {
	armed *atomic.Bool
	ops   []func(slog.Handler) slog.Handler // the WithAttrs and WithGroup calls, in order
}

func (h *laterHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.armed.Load() && slog.Default().Handler().Enabled(ctx, level)
}

func (h *laterHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.armed.Load() {
		return nil
	}
	t := slog.Default().Handler()
	for _, op := range h.ops {
		t = op(t)
	}
	return t.Handle(ctx, r)
}

func (h *laterHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &laterHandler{h.armed, append(slices.Clip(h.ops), func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })}
}

func (h *laterHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &laterHandler{h.armed, append(slices.Clip(h.ops), func(t slog.Handler) slog.Handler { return t.WithGroup(name) })}
}

// logStart writes the start-up lines that the package doc describes, the
// knobs' SettingErr included (the packages' own lines are dropped until
// start-up is done). A knob's Result is nil when FITGO turned it off.
func logStart(l *slog.Logger, settingErr error, mp *maxprocs.Result, ml *memlimit.Result) {
	if l == nil {
		return
	}
	errs := []error{settingErr}
	if mp != nil {
		errs = append(errs, mp.SettingErr)
	}
	if ml != nil {
		errs = append(errs, ml.SettingErr)
	}
	if err := errors.Join(errs...); err != nil {
		for _, msg := range strings.Split(err.Error(), "\n") {
			l.Warn("fitgo: " + msg)
		}
	}
	level, msg := slog.LevelDebug, "fitgo: nothing to change"
	if mp != nil && mp.Changed || ml != nil && ml.Changed {
		level, msg = slog.LevelInfo, "fitgo: fitted the Go runtime to the container"
	}
	l.LogAttrs(context.Background(), level, msg, knobs(mp, ml)...)
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
// in force, which a Result of zeros would give as 0 ("no limit" in words).
func knobs(mp *maxprocs.Result, ml *memlimit.Result) []slog.Attr {
	off := (*memlimit.Fit)(nil).Status().After
	mem := any(off)
	if off == math.MaxInt64 {
		mem = "no limit"
	}
	a := []slog.Attr{slog.Group("GOMAXPROCS", "fitgo", "off", "value", (*maxprocs.Fit)(nil).Status().After),
		slog.Group("GOMEMLIMIT", "fitgo", "off", "value", mem)}
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
