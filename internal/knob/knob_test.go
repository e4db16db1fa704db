package knob

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// fakeHooks is a session of a knob over an int, with fixed answers.
type fakeHooks struct {
	Session[int]
	adopt    bool // Adopt's answer
	defer_   bool // Defer's answer
	commits  int
	restores int
}

func (h *fakeHooks) Tick(time.Time, cgroup.Limits, error) bool { return true }
func (h *fakeHooks) Commit()                                   { h.commits++ }
func (h *fakeHooks) Adopt(int) bool                            { return h.adopt }
func (h *fakeHooks) Defer(time.Time, int) bool                 { return h.defer_ }
func (h *fakeHooks) HandOverReason(from, cur int) string {
	return fmt.Sprintf("changed from %d to %d", from, cur)
}
func (h *fakeHooks) UpdatedArgs(from int) []any { return []any{"from", from} }
func (h *fakeHooks) Restore() {
	h.restores++
	h.k.Set(h.k.Orig())
	h.k.Disown(h.k.Orig())
}

var testText = &Text{Name: "X"}

func newKnob(v int) (*Knob[int], *int) {
	val := v
	return &Knob[int]{Get: func() int { return val }, Set: func(n int) { val = n }}, &val
}

// apply is an Apply that sets v when it differs from the current value.
func apply(k *Knob[int], v int) *fakeHooks {
	h := &fakeHooks{}
	k.Lock()
	defer k.Unlock()
	cur := k.Get()
	h.Begin(k, h, testText, nil, cur, true)
	if v != cur {
		k.Own(cur, v)
	}
	h.Follow(time.Hour, time.Second)
	return h
}

func step(h *fakeHooks, want int, ok bool, err error) bool {
	h.k.Lock()
	defer h.k.Unlock()
	return h.Step(time.Now(), want, ok, err)
}

func state(h *fakeHooks) State[int] {
	h.k.Lock()
	defer h.k.Unlock()
	return h.State()
}

func TestUndoLIFO(t *testing.T) {
	k, val := newKnob(8)
	s1 := apply(k, 4)
	s2 := apply(k, 2)
	s3 := apply(k, 1)
	assert.False(t, state(s1).Following)
	assert.Equal(t, "superseded by a later Apply", state(s1).Reason)

	s3.Undo()
	assert.Equal(t, 2, *val, "back to the value of the Apply before")
	s3.Undo()
	assert.Equal(t, 2, *val, "again: nothing")
	s2.Undo()
	assert.Equal(t, 4, *val)
	s1.Undo()
	assert.Equal(t, 8, *val, "Restore: the value before fitgo")
	assert.Equal(t, 1, s1.restores)
	assert.Equal(t, "undone", state(s3).Reason)
	assert.Equal(t, "superseded by a later Apply", state(s1).Reason, "Undo keeps the reason it stopped for")
}

func TestUndoOutOfOrder(t *testing.T) {
	k, val := newKnob(8)
	s1 := apply(k, 4)
	apply(k, 2)
	s1.Undo()
	assert.Equal(t, 2, *val, "a later Apply is in force")
	assert.Zero(t, s1.restores)
}

func TestUndoAfterSomeoneElse(t *testing.T) {
	k, val := newKnob(8)
	s := apply(k, 4)
	*val = 6
	s.Undo()
	assert.Equal(t, 6, *val, "fitgo does not own the value")
}

func TestStep(t *testing.T) {
	k, val := newKnob(8)
	s := apply(k, 4)

	assert.True(t, step(s, 4, true, nil), "nothing to do")
	assert.Zero(t, state(s).Updates)
	assert.Equal(t, 1, s.commits)

	assert.True(t, step(s, 3, true, nil))
	assert.Equal(t, 3, *val)
	assert.Equal(t, 1, state(s).Updates)

	errBad := fmt.Errorf("bad file")
	assert.True(t, step(s, 0, false, errBad))
	assert.Equal(t, 3, *val, "a bad reading changes nothing")
	assert.Equal(t, errBad, state(s).Err)
	assert.Equal(t, 2, s.commits, "and is not committed")

	assert.True(t, step(s, 0, false, nil), "the limit is gone")
	assert.Equal(t, 8, *val)
	assert.Equal(t, 1, s.restores)
	assert.NoError(t, state(s).Err)
	assert.Equal(t, 2, state(s).Updates)

	s.defer_ = true
	assert.True(t, step(s, 5, true, nil))
	assert.Equal(t, 8, *val, "left to the runtime: fitgo does not own the value")

	*val = 7
	s.adopt = true
	assert.True(t, step(s, 7, true, nil), "the runtime's own update is adopted")
	assert.True(t, state(s).Following)

	s.adopt = false
	*val = 9
	assert.False(t, step(s, 7, true, nil), "someone else's change: hand over")
	assert.Equal(t, 9, *val)
	st := state(s)
	assert.False(t, st.Following)
	assert.Equal(t, "changed from 7 to 9", st.Reason)
	require.True(t, s.Stopped(), "the package's Tick steps no more")
}
