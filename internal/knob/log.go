package knob

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// changeArgs are the log arguments of someone else's change of was to cur
// (by: the likely other library).
func (f *Fit[V, D]) changeArgs(cur, was V, by string) []any {
	args := []any{f.k.txt.Name, f.k.txt.Log(cur), "was", f.k.txt.Log(was)}
	if by != "" {
		args = append(args, "by", "another library, matching "+by)
	}
	return args
}

// removed is the why of a change to the state from before fitgo.
const removed = "\x00removed"

// why is the reason a Status gives for s: someone else's change, a failing
// reading, or why following stopped; "": Apply's reason stands.
func (f *Fit[V, D]) why(s State[V, D]) string {
	txt := &f.k.txt
	switch {
	case s.Following && s.Err != nil:
		return "the " + txt.Limit + " cannot be read: " + txt.Name + " is not fitted until it can"
	case !s.HandedOver && !s.Following:
		return s.Reason
	case !s.HandedOver && s.Kept == 0:
		return ""
	}
	// Someone else changed the value: fitgo handed it over or put it back.
	reason := txt.Value + " was changed from " + txt.Format(s.From) + " to " + txt.Format(s.To)
	if s.By != "" {
		reason += " by another library, matching " + s.By
	} else {
		reason += " outside fitgo"
	}
	switch {
	case !s.HandedOver:
		return reason + "; fitgo put its value back (insist, " + strconv.Itoa(s.Kept) + " times)"
	case s.By != "":
		return reason + "; no longer managed (to keep fitgo's value: FITGO=insist=on or Options.Insist)"
	}
	return reason + "; no longer managed"
}

// event is a log line, written once the lock is released.
type event struct {
	level slog.Level
	msg   string
	args  []any
}

func (f *Fit[V, D]) emit(ev event) {
	if ev.msg != "" && f.log != nil {
		f.log.Log(context.Background(), ev.level, ev.msg, ev.args...)
	}
}

// logEvery is how often a Fit logs its refresh's changes: the first at
// once; later ones within logEvery of the last line are held back and logged
// as one line, with their count, at the first reading after it, so that a
// flapping limit cannot flood the logs. The value follows every reading.
const logEvery = 10 * time.Second

// coalescer holds back change lines within logEvery of the last one.
type coalescer[V comparable] struct {
	at   time.Time // of the last line
	held int       // changes since, not logged
	from V         // the value before the first of them
	why  string
}

// flush logs the held-back changes unless the last line is too recent,
// allocating nothing when there is nothing to log; the lock is held.
func (f *Fit[V, D]) flush(now time.Time, cur V) event {
	c := &f.logs
	if c.held == 0 || !c.at.IsZero() && now.Sub(c.at) < logEvery {
		return event{}
	}
	n, from := c.held, c.from
	c.held, c.at = 0, now
	args := []any{f.k.txt.Name, f.k.txt.Log(cur), "before", f.k.txt.Log(from), f.k.txt.Key, f.st.Limit}
	if n > 1 {
		args = append(args, "changes", n)
	}
	what := " " + c.why
	switch c.why {
	case removed:
		what = ": " + f.k.txt.Limit + " removed"
	case "":
		what = ": " + f.k.txt.Limit + " changed"
	}
	return event{level: slog.LevelInfo, msg: "fitgo: " + f.k.txt.Name + " updated" + what, args: args}
}
