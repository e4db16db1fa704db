package memlimit

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// events is the type of Result.Events.
type events = struct{ Low, High, Max, OOM, OOMKill, OOMGroupKill uint64 }

// fixtureEnv is a test env over one of the cgroup package's fixture trees.
func fixtureEnv(t *testing.T, name string) *testEnv {
	t.Helper()
	fsys := os.DirFS(filepath.Join("..", "cgroup", "testdata", name))
	te := newTestEnv(&fakeKnob{value: noLimit}, nil)
	te.fsys, te.cgroups = fsys, fsys
	te.src.setReading(cgroup.ReadFS(fsys))
	return te
}

// TestEventsFixtures: Status and Plan report the memory events of the
// cgroup whose limit bound the value, on v2 (memory.events) and v1
// (memory.failcnt, oom_kill of memory.oom_control).
func TestEventsFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture, source, from string
		want                  events
		text                  string
	}{
		{"stats-v2", "/sys/fs/cgroup/pod/ctr", "memory.max", events{Max: 12, OOM: 1, OOMKill: 1},
			"memory events at /sys/fs/cgroup/pod/ctr: oom_kill 1, oom 1, max 12"},
		{"stats-v1", "/sys/fs/cgroup/memory", "memory.limit_in_bytes", events{Max: 3, OOMKill: 2},
			"memory events at /sys/fs/cgroup/memory: oom_kill 2, max 3"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			te := fixtureEnv(t, tc.fixture)
			fit, err := Apply(te.opts(Options{}))
			require.NoError(t, err)
			assert.False(t, fit.res.HasEvents, "Apply reads only the limits")
			st := fit.Status()
			assert.Equal(t, tc.source, st.Source)
			assert.Equal(t, tc.from, st.From)
			assert.True(t, st.HasEvents)
			assert.Equal(t, tc.want, st.Events)
			assert.Contains(t, st.String(), "; "+tc.text+"; policy")

			var buf bytes.Buffer
			slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "r", st)
			assert.Contains(t, buf.String(), "r.memory_events.oom_kill="+map[string]string{"stats-v2": "1", "stats-v1": "2"}[tc.fixture])
			assert.NotContains(t, buf.String(), "memory_events.low", "zero counters are left out")

			plan, err := Plan(te.opts(Options{}))
			require.NoError(t, err)
			assert.Equal(t, st.Events, plan.Events)
			assert.True(t, plan.HasEvents)
		})
	}
}

// TestEventsNotACgroup: no events where the limit is not a cgroup's, or
// where the cgroup has no event files; and none in the summary then.
func TestEventsNotACgroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		opts Options
		from string
	}{
		{"MemTotal", v2FS("", "", ""), Options{SystemMemory: true}, "MemTotal"},
		{"upper limit", v2FS("", "", ""), Options{UpperLimit: 256 * MiB}, "UpperLimit"},
		{"no event files", v2FS("536870912", "", ""), Options{}, "memory.max"},
		{"no limit", v2FS("", "", ""), Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: noLimit}, tc.fsys)
			fit, err := Apply(te.opts(tc.opts))
			require.NoError(t, err)
			st := fit.Status()
			assert.Equal(t, tc.from, st.From)
			assert.False(t, st.HasEvents)
			assert.Equal(t, events{}, st.Events)
			assert.NotContains(t, st.String(), "memory events")
		})
	}
	// A nil Fit has none either.
	assert.False(t, (*Fit)(nil).Status().HasEvents)
}

// TestEventsFollowTheRefresh: the counters change between readings, and a
// resize moves the binding level from the process's cgroup to the pod's:
// each Status reports the events of the level of the last reading.
func TestEventsFollowTheRefresh(t *testing.T) {
	fsys := v2FS("536870912", "", "1073741824")
	for _, dir := range []string{"sys/fs/cgroup/pod", "sys/fs/cgroup/pod/app"} {
		fsys[dir+"/cgroup.controllers"] = &fstest.MapFile{Data: []byte("cpu memory\n")}
	}
	setEvents := func(dir, data string) { fsys[dir+"/memory.events"] = &fstest.MapFile{Data: []byte(data)} }
	setEvents("sys/fs/cgroup/pod/app", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
	setEvents("sys/fs/cgroup/pod", "low 0\nhigh 0\nmax 40\noom 3\noom_kill 2\noom_group_kill 0\n")
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, fsys)
	fit, _ := applyFollowing(t, te, Options{})
	st := fit.Status()
	require.Equal(t, "/sys/fs/cgroup/pod/app", st.Source)
	assert.True(t, st.HasEvents)
	assert.Equal(t, events{}, st.Events)
	assert.NotContains(t, st.String(), "memory events", "all zero: not shown")

	// The limit is hit between two readings.
	setEvents("sys/fs/cgroup/pod/app", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n")
	te.src.setReading(cgroup.ReadFS(fsys))
	te.tick()
	st = fit.Status()
	assert.Equal(t, "/sys/fs/cgroup/pod/app", st.Source)
	assert.Equal(t, events{Max: 7, OOM: 1, OOMKill: 1}, st.Events)

	// The pod's limit is lowered below the container's: the pod binds.
	fsys["sys/fs/cgroup/pod/memory.max"] = &fstest.MapFile{Data: []byte("402653184\n")}
	te.src.setReading(cgroup.ReadFS(fsys))
	te.tick()
	value, _ := fk.get()
	require.Equal(t, int64(362387865), value)
	st = fit.Status()
	assert.Equal(t, "/sys/fs/cgroup/pod", st.Source)
	assert.Equal(t, events{Max: 40, OOM: 3, OOMKill: 2}, st.Events)
	assert.Contains(t, st.String(), "memory events at /sys/fs/cgroup/pod: oom_kill 2, oom 3, max 40")

	// The events file goes away (or cannot be read): no events, no error.
	delete(fsys, "sys/fs/cgroup/pod/memory.events")
	st = fit.Status()
	assert.False(t, st.HasEvents)
	assert.NoError(t, st.Err)
}
