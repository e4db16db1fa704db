package fitgoprom

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

var update = flag.Bool("update", false, "rewrite the expected expositions in testdata")

// fixture is one of the cgroup package's fixture trees: a copy of the files a
// process sees in a container.
func fixture(name string) Option {
	return WithFS(os.DirFS(filepath.Join("..", "cgroup", "testdata", name)))
}

// TestCollectFixtures compares the whole exposition of the fixture trees with
// testdata/NAME.prom, whose values were checked by hand against the fixture
// files (see TestCollectValues for the ones that matter most).
func TestCollectFixtures(t *testing.T) {
	mp, err := maxprocs.Apply(maxprocs.Options{Limits: &cgroup.Limits{}})
	require.NoError(t, err)
	t.Cleanup(mp.Undo)
	ml, err := memlimit.Apply(memlimit.Options{Limits: &cgroup.Limits{}})
	require.NoError(t, err)
	t.Cleanup(ml.Undo)
	for _, name := range []string{"stats-v2", "stats-v1", "v2-kubepods-host", "hybrid"} {
		t.Run(name, func(t *testing.T) {
			opts := []Option{fixture(name)}
			if name == "stats-v2" {
				opts = append(opts, WithFits(mp, ml))
			}
			c := NewCollector(opts...)
			golden := filepath.Join("testdata", name+".prom")
			if *update {
				reg := prometheus.NewPedanticRegistry()
				reg.MustRegister(c)
				mfs, err := reg.Gather()
				require.NoError(t, err)
				var b strings.Builder
				for _, mf := range mfs {
					require.NoError(t, writeText(&b, mf))
				}
				require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(string(want))))
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			assert.Empty(t, problems)
		})
	}
}

// The values that the issue names, on v2 and v1, metric by metric.
func TestCollectValues(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    map[string]float64
	}{
		{"stats-v2", map[string]float64{
			"fitgo_cpu_limit_cores":                                            0.5,
			"fitgo_cpu_cfs_periods_total":                                      30,
			"fitgo_cpu_cfs_throttled_periods_total":                            24,
			"fitgo_cpu_cfs_throttled_seconds_total":                            1.1,
			"fitgo_cpu_usage_seconds_total":                                    1.7,
			"fitgo_memory_limit_bytes":                                         268435456,
			"fitgo_memory_usage_bytes":                                         52428800,
			"fitgo_memory_working_set_bytes":                                   52428800 - 12582912,
			"fitgo_memory_max_usage_bytes":                                     67108864,
			`fitgo_memory_events_total{event="max"}`:                           12,
			`fitgo_memory_events_total{event="oom_kill"}`:                      1,
			`fitgo_pressure_stalled_seconds_total{kind="some",resource="cpu"}`: 1.234567,
			`fitgo_pressure_stalled_seconds_total{kind="full",resource="io"}`:  0.2,
		}},
		{"stats-v1", map[string]float64{
			"fitgo_cpu_limit_cores":                       0.5,
			"fitgo_cpu_cfs_periods_total":                 15,
			"fitgo_cpu_cfs_throttled_periods_total":       12,
			"fitgo_cpu_cfs_throttled_seconds_total":       0.95,
			"fitgo_memory_limit_bytes":                    268435456,
			"fitgo_memory_working_set_bytes":              41943040 - 8388608,
			`fitgo_memory_events_total{event="max"}`:      3,
			`fitgo_memory_events_total{event="oom_kill"}`: 2,
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewCollector(fixture(tc.fixture)))
			got := gathered(t, reg)
			for k, v := range tc.want {
				assert.InDelta(t, v, got[k], 1e-9, k)
			}
			if tc.fixture == "stats-v1" {
				for k := range got {
					assert.NotContains(t, k, "pressure", "no PSI on v1")
					assert.NotContains(t, k, `event="low"`, "v1 has no such event")
				}
			}
		})
	}
}

// gathered returns the gathered samples by name and labels.
func gathered(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
				}
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestGatherAndLint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(fixture("stats-v2")))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestNoCgroup(t *testing.T) {
	c := NewCollector(WithFS(fstest.MapFS{}))
	assert.Zero(t, testutil.CollectAndCount(c))
	// Described all the same: a pedantic registry takes it.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, mfs)
}

// A malformed statistics file counts as a read error and leaves its metrics
// out; the limits are still there.
func TestReadErrors(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/self/cgroup":                 file("0::/app\n"),
		"proc/self/mountinfo":              file("35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/app/cpu.max":        file("50000 100000\n"),
		"sys/fs/cgroup/app/cpu.stat":       file("nr_periods x\n"),
		"sys/fs/cgroup/app/memory.max":     file("1048576\n"),
		"sys/fs/cgroup/app/memory.current": file("4096\n"),
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(WithFS(fsys)))
	got := gathered(t, reg)
	assert.Equal(t, 1.0, got["fitgo_read_errors_total"])
	assert.Equal(t, 0.5, got["fitgo_cpu_limit_cores"])
	assert.Equal(t, 4096.0, got["fitgo_memory_usage_bytes"])
	assert.NotContains(t, got, "fitgo_cpu_cfs_periods_total")
	got = gathered(t, reg)
	assert.Equal(t, 2.0, got["fitgo_read_errors_total"], "counted per scrape")
}

// TestReadAllocs: the library's reading in a scrape allocates nothing.
func TestReadAllocs(t *testing.T) {
	for _, name := range []string{"stats-v2", "stats-v1"} {
		c := NewCollector(fixture(name)).(*collector)
		if _, _, _, ok := c.read(); !ok {
			t.Fatal("no cgroup in the fixture")
		}
		allocs := testing.AllocsPerRun(100, func() {
			if _, _, _, ok := c.read(); !ok {
				t.Fatal("no cgroup in the fixture")
			}
		})
		assert.Zero(t, allocs, name)
	}
}

// BenchmarkScrape measures a scrape: the library's reading alone ("read",
// which allocates nothing), and the whole Collect with the metrics built
// ("collect").
func BenchmarkScrape(b *testing.B) {
	for _, name := range []string{"stats-v2", "stats-v1", "live"} {
		opt := fixture(name)
		if name == "live" {
			opt = WithFS(os.DirFS("/"))
		}
		c := NewCollector(opt).(*collector)
		if _, _, _, ok := c.read(); !ok {
			b.Logf("%s: no cgroup", name)
			continue
		}
		b.Run(name+"/read", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.read()
			}
		})
		b.Run(name+"/collect", func(b *testing.B) {
			ch := make(chan prometheus.Metric, 64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.Collect(ch)
				for len(ch) > 0 {
					<-ch
				}
			}
		})
	}
}

// writeText writes mf in the text exposition format.
func writeText(w io.Writer, mf *dto.MetricFamily) error {
	_, err := expfmt.MetricFamilyToText(w, mf)
	return err
}

// TestCollectNotUTF8: a cgroup directory whose name is not UTF-8 (byte 0xff)
// is escaped in the labels, which Prometheus requires to be UTF-8, instead of
// a panic at the scrape. (An fs.FS has no such file names; the real root,
// the default, has.)
func TestCollectNotUTF8(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(WithFS(fstest.MapFS{
		"proc/self/cgroup":    {Data: []byte("0::/a\xffb\n")},
		"proc/self/mountinfo": {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")},
	})))
	var got map[string]float64
	require.NotPanics(t, func() { got = gathered(t, reg) })
	dir := `/sys/fs/cgroup/a\xffb`
	assert.Contains(t, got, `fitgo_cgroup_info{cpu_dir="`+dir+`",cpu_source="",cpu_version="v2",gomaxprocs_policy="",gomemlimit_policy="",memory_dir="`+dir+`",memory_high_source="",memory_source="",memory_version="v2"}`)
}

// TestCollectOOMCaptures: fitgo_oom_captures_total is sent for a memlimit
// Fit with the OOM capture on, and only then.
func TestCollectOOMCaptures(t *testing.T) {
	lim := &cgroup.Limits{Memory: cgroup.Memory{Version: cgroup.V2, Max: 256 << 20, MaxSource: "/sys/fs/cgroup/app"}}
	for _, dir := range []string{"", t.TempDir()} {
		ml, err := memlimit.Apply(memlimit.Options{Limits: lim, Refresh: time.Hour, OOMProfile: dir})
		require.NoError(t, err)
		require.NoError(t, ml.Status().OOMCapture.Err)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(fixture("stats-v2"), WithFits(nil, ml)))
		v, ok := gathered(t, reg)["fitgo_oom_captures_total"]
		assert.Equal(t, dir != "", ok, "dir %q", dir)
		assert.Zero(t, v)
		ml.Undo()
	}
}
