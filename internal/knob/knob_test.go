package knob

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKnob is a runtime setting over an int. between, when set, is a value
// someone else writes between fitgo's read and its write.
type fakeKnob struct {
	val      int
	restores int
	between  *int
}

func (f *fakeKnob) knob() *Knob[int] {
	set := func(n int) int {
		if f.between != nil {
			f.val, f.between = *f.between, nil
		}
		p := f.val
		f.val = n
		return p
	}
	return New(Spec[int]{Name: "X", Value: "x", Limit: "x limit", Key: "x_limit", Format: strconv.Itoa},
		func() int { return f.val }, set, func(orig int) int { f.restores++; return set(orig) })
}

// apply is an Apply that sets v when it differs from the current value and
// follows.
func apply(t *testing.T, k *Knob[int], v int, log *slog.Logger) *Fit[int, string] {
	t.Helper()
	cur, _ := k.peek()
	f, ok := start(k, log, cur, v, v != cur, true)
	require.True(t, ok)
	return f
}

func want(v int) Reading[int, string] { return Reading[int, string]{Want: v, Has: true, Limit: "lim"} }

func TestUndoLIFO(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	s1 := apply(t, k, 4, nil)
	s2 := apply(t, k, 2, nil)
	s3 := apply(t, k, 1, nil)
	assert.False(t, s1.State().Following)
	assert.Equal(t, "superseded by a later Apply", s1.State().Reason)

	s3.Undo()
	assert.Equal(t, 2, fk.val, "back to the value of the Apply before")
	s3.Undo()
	assert.Equal(t, 2, fk.val, "again: nothing")
	s2.Undo()
	assert.Equal(t, 4, fk.val)
	s1.Undo()
	assert.Equal(t, 8, fk.val, "restore: the value before fitgo")
	assert.Equal(t, 1, fk.restores)
	assert.Equal(t, "undone", s3.State().Reason)
	assert.Equal(t, "superseded by a later Apply", s1.State().Reason, "Undo keeps the reason it stopped for")
}

// TestUndoOutOfOrder: once every Apply is undone, in any order, the value
// from before fitgo is back, and a second Undo does nothing. (Before, the
// last Undo left the first Apply's value, and a second Undo changed it.)
func TestUndoOutOfOrder(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	lib := apply(t, k, 4, nil)
	app := apply(t, k, 2, nil)
	lib.Undo()
	assert.Equal(t, 2, fk.val, "a later Apply is in force")
	assert.Zero(t, fk.restores)
	app.Undo()
	assert.Equal(t, 8, fk.val, "every Apply undone: the value before fitgo")
	lib.Undo()
	app.Undo()
	assert.Equal(t, 8, fk.val, "a second Undo does nothing")
	assert.Equal(t, 1, fk.restores)

	// Three Applies, the middle one undone first.
	s1, s2, s3 := apply(t, k, 4, nil), apply(t, k, 2, nil), apply(t, k, 1, nil)
	s2.Undo()
	assert.Equal(t, 1, fk.val)
	s3.Undo()
	assert.Equal(t, 4, fk.val, "back to the value of the Apply still standing")
	s1.Undo()
	assert.Equal(t, 8, fk.val)
}

func TestUndoAfterSomeoneElse(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	s := apply(t, k, 4, nil)
	fk.val = 6
	s.Undo()
	assert.Equal(t, 6, fk.val, "fitgo does not own the value")
	assert.Zero(t, fk.restores)
}

func TestStartFailsWhenTheValueMoved(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	_, ok := start(k, nil, 7, 4, true, false)
	assert.False(t, ok, "the caller read 7, the value is 8: decide again")
	assert.Equal(t, 8, fk.val)
}

func TestStep(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	s := apply(t, k, 4, nil)
	now := time.Now()

	assert.True(t, s.Step(now, want(4)), "nothing to do")
	assert.Zero(t, s.State().Updates)
	assert.Equal(t, "lim", s.State().Limit, "the reading is recorded")

	assert.True(t, s.Step(now, want(3)))
	assert.Equal(t, 3, fk.val)
	assert.Equal(t, 1, s.State().Updates)

	errBad := fmt.Errorf("bad file")
	assert.True(t, s.Step(now, Reading[int, string]{Err: errBad, Limit: "bad"}))
	assert.Equal(t, 3, fk.val, "a bad reading changes nothing")
	assert.Equal(t, errBad, s.State().Err)
	assert.Equal(t, "lim", s.State().Limit, "and is not recorded")
	assert.True(t, s.State().Following, "it follows again once the reading is good")

	assert.True(t, s.Step(now, Reading[int, string]{}), "the limit is gone")
	assert.Equal(t, 8, fk.val)
	assert.Equal(t, 1, fk.restores)
	assert.NoError(t, s.State().Err)
	assert.Equal(t, 2, s.State().Updates)

	r := want(5)
	r.Runtime, r.Seen, r.Wait = true, 8, true
	assert.True(t, s.Step(now, r))
	assert.Equal(t, 8, fk.val, "left to the runtime: fitgo does not own the value")

	fk.val = 7
	r = want(7)
	r.Runtime, r.Adopt, r.Seen = true, [2]int{7, 8}, 7
	assert.True(t, s.Step(now, r), "the runtime's own update is adopted")
	assert.True(t, s.State().Following)

	fk.val = 9
	r.Seen = 9 // seen by the tick
	assert.False(t, s.Step(now, r), "someone else's change: hand over")
	assert.Equal(t, 9, fk.val)
	st := s.State()
	assert.False(t, st.Following)
	assert.True(t, st.HandedOver)
	assert.Equal(t, [2]int{7, 9}, [2]int{st.From, st.To})
	assert.False(t, s.Step(now, want(1)), "a stopped Fit steps no more")
	assert.Equal(t, 9, fk.val)
}

// TestRuntimeUpdateRacesTheTick: the runtime changes the value after the tick
// looked at it (Moved) and before Step reads it. The prediction was made for
// the old value, so the step is left to the next tick, which adopts the
// runtime's update. (Before, Step took it for someone else's and handed over:
// seen in CI as "changed from 2 to 1 outside fitgo" after taskset.)
func TestRuntimeUpdateRacesTheTick(t *testing.T) {
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	cur, _ := k.peek()
	s, ok := start(k, nil, cur, cur, false, true)
	require.True(t, ok)
	now := time.Now()

	seen, moved := s.Moved()
	assert.Equal(t, 8, seen)
	assert.False(t, moved)
	fk.val = 1 // the runtime's own update, after the tick's look
	r := want(8)
	r.Runtime, r.Adopt, r.Seen = true, [2]int{8, 8}, seen
	assert.True(t, s.Step(now, r), "not a hand-over: the reading was for the value 8")
	assert.True(t, s.State().Following)
	assert.Equal(t, 1, fk.val, "nothing written")

	seen, moved = s.Moved()
	assert.Equal(t, 1, seen)
	assert.True(t, moved)
	r = want(1)
	r.Runtime, r.Adopt, r.Seen = true, [2]int{1, 8}, seen
	assert.True(t, s.Step(now, r), "the next tick adopts the runtime's update")
	assert.True(t, s.State().Following)

	fk.val = 5 // someone else, seen by the tick
	seen, _ = s.Moved()
	r.Seen = seen
	assert.False(t, s.Step(now, r), "a change the tick saw and cannot explain is handed over")
	assert.True(t, s.State().HandedOver)
}

// TestWriteRace: someone writes between fitgo's read and its write. The
// previous value the setter returns is not the one fitgo read: fitgo puts it
// back and hands over, in a refresh and in Undo. (Before, fitgo overwrote it
// and kept ownership.)
func TestWriteRace(t *testing.T) {
	t.Run("refresh", func(t *testing.T) {
		fk := &fakeKnob{val: 8}
		k := fk.knob()
		s := apply(t, k, 4, nil)
		other := 6
		fk.between = &other
		assert.False(t, s.Step(time.Now(), want(2)))
		assert.Equal(t, 6, fk.val, "the other write stands")
		st := s.State()
		assert.True(t, st.HandedOver)
		assert.Equal(t, 6, st.To)
		s.Undo()
		assert.Equal(t, 6, fk.val)
	})
	t.Run("undo", func(t *testing.T) {
		fk := &fakeKnob{val: 8}
		k := fk.knob()
		s := apply(t, k, 4, nil)
		other := 5
		fk.between = &other
		s.Undo()
		assert.Equal(t, 5, fk.val, "the other write stands")
		assert.True(t, s.State().HandedOver)
	})
	t.Run("start", func(t *testing.T) {
		fk := &fakeKnob{val: 8}
		k := fk.knob()
		other := 3
		fk.between = &other
		_, ok := start(k, nil, 8, 4, true, true)
		assert.False(t, ok, "the caller decides again")
		assert.Equal(t, 3, fk.val)
	})
}

// TestChangeLinesCoalesce: a resize storm (200 changes in 2 s) logs the first
// change at once and the rest in one line after logEvery; the value follows
// every reading.
func TestChangeLinesCoalesce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	fk := &fakeKnob{val: 8}
	s := apply(t, fk.knob(), 4, log)
	start := time.Unix(1000, 0)
	for i := 0; i < 200; i++ {
		require.True(t, s.Step(start.Add(time.Duration(i)*10*time.Millisecond), want(1+i%5)))
		require.Equal(t, 1+i%5, fk.val, "the value follows every reading")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, buf.String())
	assert.Contains(t, lines[0], `msg="fitgo: X updated: x limit changed" X=1 before=4 x_limit=lim`)

	// Quiet readings within logEvery log nothing; the first after it logs
	// the held-back changes in one line.
	s.Step(start.Add(5*time.Second), want(5))
	assert.Len(t, strings.Split(strings.TrimSpace(buf.String()), "\n"), 1)
	s.Step(start.Add(logEvery), want(5))
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	assert.Contains(t, lines[1], `msg="fitgo: X updated: x limit changed" X=5 before=1 x_limit=lim changes=199`)
	assert.Equal(t, 200, s.State().Updates)

	// A change long after the last line is logged at once again.
	s.Step(start.Add(3*logEvery), want(2))
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], "X=2 before=5")

	// A change for another reason than the limit's says so.
	r := want(3)
	r.Why = "by the leak guard"
	s.Step(start.Add(5*logEvery), r)
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[3], `msg="fitgo: X updated by the leak guard" X=3 before=2`)
	assert.NotContains(t, lines[2], "changes=")
}

func TestReadErrorWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	fk := &fakeKnob{val: 8}
	s := apply(t, fk.knob(), 4, log)
	bad := Reading[int, string]{Err: fmt.Errorf("too many open files")}
	for i := 0; i < 3; i++ {
		assert.True(t, s.Step(time.Now(), bad))
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"))
	assert.Contains(t, buf.String(), `level=WARN msg="fitgo: cannot read the x limit; X not fitted until it can"`)
	assert.True(t, s.Step(time.Now(), want(2)))
	assert.Equal(t, 2, fk.val, "followed again")
	assert.NoError(t, s.State().Err)
}

func TestStopAndUndoAreIdempotent(t *testing.T) {
	fk := &fakeKnob{val: 8}
	s := apply(t, fk.knob(), 4, nil)
	s.Stop("stopped")
	s.Stop("stopped")
	assert.Equal(t, "stopped", s.State().Reason)
	assert.Equal(t, 4, fk.val, "Stop keeps the value")
	s.Undo()
	assert.Equal(t, 8, fk.val)
	assert.Equal(t, "stopped", s.State().Reason)
}

func withOther(v, other int) Reading[int, string] {
	r := want(v)
	r.Other, r.OtherWhy = other, "lib's rule"
	return r
}

// TestHandOverNamesTheOtherLibrary: a change seen at the first reading after
// fitgo set the value, to exactly the value of the other library's rule, is
// named in the state and the log line; a change after a reading saw fitgo's
// value intact, or to another value, is not.
func TestHandOverNamesTheOtherLibrary(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		intact bool // a reading saw fitgo's value before the change
		to     int
		why    string
	}{
		{"right after fitgo set it", false, 1, "x was changed from 2 to 1 by another library, matching lib's rule; no longer managed (to keep fitgo's value: FITGO=insist=on or Options.Insist)"},
		{"after a reading saw fitgo's value", true, 1, "x was changed from 2 to 1 outside fitgo; no longer managed"},
		{"to another value", false, 3, "x was changed from 2 to 3 outside fitgo; no longer managed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			fk := &fakeKnob{val: 8}
			s := apply(t, fk.knob(), 2, slog.New(slog.NewTextHandler(&buf, nil)))
			if tc.intact {
				require.True(t, s.Step(now, withOther(2, 1)))
			}
			fk.val = tc.to
			assert.False(t, s.Step(now, withOther(2, 1)), "handed over")
			assert.Equal(t, tc.to, fk.val, "fitgo does not fight")
			assert.Equal(t, tc.why, s.why(s.State()))
			assert.Equal(t, tc.why != "" && !tc.intact && tc.to == 1, strings.Contains(buf.String(), `by="another library, matching lib's rule"`), buf.String())
		})
	}
}

// TestInsist: a Fit that insists puts its value back at the next reading,
// logs that once, keeps following the limit, and Undo still gives the state
// from before fitgo back.
func TestInsist(t *testing.T) {
	var buf bytes.Buffer
	now := time.Now()
	fk := &fakeKnob{val: 8}
	s := apply(t, fk.knob(), 2, slog.New(slog.NewTextHandler(&buf, nil)))
	s.setInsist(true)

	fk.val = 1
	assert.True(t, s.Step(now, withOther(2, 1)), "still following")
	assert.Equal(t, 2, fk.val, "put back")
	st := s.State()
	assert.Equal(t, 1, st.Kept)
	assert.False(t, st.HandedOver)
	assert.Equal(t, "x was changed from 2 to 1 by another library, matching lib's rule; fitgo put its value back (insist, 1 times)", s.why(st))
	assert.Contains(t, buf.String(), `msg="fitgo: X changed by someone else; fitgo puts its value back (insist)" X=2 was=1 by="another library, matching lib's rule"`)

	fk.val = 5 // again, with a new limit at the same reading
	assert.True(t, s.Step(now, want(3)))
	assert.Equal(t, 3, fk.val, "put back, then fitted to the new limit")
	assert.Equal(t, 2, s.State().Kept)
	assert.Equal(t, "x was changed from 2 to 5 outside fitgo; fitgo put its value back (insist, 2 times)", s.why(s.State()))
	assert.Equal(t, 1, strings.Count(buf.String(), "puts its value back"), "logged once")

	s.Undo()
	assert.Equal(t, 8, fk.val, "the state from before fitgo")
}
