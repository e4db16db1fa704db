package fitgo

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/maxprocs"
)

// defSetting is FITGO's default: both knobs on, refreshed every second,
// each keeping a value set before fitgo.
func defSetting() setting {
	c := setting{maxprocs: true, memlimit: true, every: time.Second}
	c.mp.KeepExisting, c.ml.KeepExisting = true, true
	return c
}

func TestFITGO(t *testing.T) {
	both := func(c *setting) { c.maxprocs, c.memlimit = false, false }
	noMP := func(c *setting) { c.maxprocs = false }
	noML := func(c *setting) { c.memlimit = false }
	every := func(d time.Duration) func(*setting) { return func(c *setting) { c.every = d } }
	rounding := func(r maxprocs.Rounding) func(*setting) { return func(c *setting) { c.mp.Rounding = r } }
	insist := func(mp, ml bool) func(*setting) {
		return func(c *setting) {
			c.mp.Insist, c.ml.Insist, c.mp.KeepExisting, c.ml.KeepExisting = mp, ml, !mp, !ml
		}
	}
	noHeadroom := func(c *setting) { c.ml.NoHeadroom = true }
	noGuard := func(c *setting) { c.ml.NoLeakGuard = true }
	unseen := func(n int64) func(*setting) { return func(c *setting) { c.ml.Reserve = n } }
	for _, tc := range []struct {
		in   string
		want []func(*setting) // changes from the default
		err  string
	}{
		{"", nil, ""},
		{"off", []func(*setting){both}, ""},
		{" off ", []func(*setting){both}, ""},
		{"maxprocs=off", []func(*setting){noMP}, ""},
		{"memlimit=off", []func(*setting){noML}, ""},
		{"memlimit=off, maxprocs = off", []func(*setting){both}, ""},
		{"off,maxprocs=on", []func(*setting){noML}, ""},
		{"refresh=off", []func(*setting){every(0)}, ""},
		{"refresh=250ms", []func(*setting){every(250 * time.Millisecond)}, ""},
		{"refresh=1ms", []func(*setting){every(10 * time.Millisecond)}, ""},
		{"refresh=2s,refresh=on", nil, ""},
		{"refresh=off,refresh=1m", []func(*setting){every(time.Minute)}, ""},
		{",,", nil, ""},
		{"headroom=off", []func(*setting){noHeadroom}, ""},
		{"headroom=off,headroom=on", nil, ""},
		{"headroom=no", nil, `"headroom=no": want on or off`},
		{"leakguard=off", []func(*setting){noGuard}, ""},
		{"leakguard=off,leakguard=on", nil, ""},
		{"leakguard=no", nil, `"leakguard=no": want on or off`},
		{"headroom=off,leakguard=off", []func(*setting){noHeadroom, noGuard}, ""},
		{"nongo=off", []func(*setting){func(c *setting) { c.ml.NoNonGo = true }}, ""},
		{" nongo = off , nongo=on", nil, ""},
		{"nongo=", nil, `"nongo=": want on or off`},
		{"nongo=0", nil, `"nongo=0": want on or off`},
		{"refresh=0s", nil, `"refresh=0s"`},
		{"refresh=-1s", nil, `"refresh=-1s"`},
		{"refresh=soon", nil, `"refresh=soon"`},
		{"maxprocs=no", nil, `"maxprocs=no": want on or off`},
		{"memlimit=0.8", nil, `"memlimit=0.8": want on or off`},
		{"gomaxprocs=off", nil, `unknown setting "gomaxprocs"`},
		{"of", nil, `"of": want off or key=value`},
		{"OFF", nil, `"OFF"`},
		{"bogus,memlimit=off", []func(*setting){noML}, `"bogus"`},
		{"rounding=floor", []func(*setting){rounding(maxprocs.Floor)}, ""},
		{"rounding=ceil", []func(*setting){rounding(maxprocs.Ceil)}, ""},
		{" rounding = nearest ", []func(*setting){rounding(maxprocs.Nearest)}, ""},
		{"rounding=ceil,rounding=floor", []func(*setting){rounding(maxprocs.Floor)}, ""},
		{"rounding=ceil,rounding=up", []func(*setting){rounding(maxprocs.Ceil)}, `"rounding=up": want floor, ceil or nearest`},
		{"rounding=round", nil, `FITGO: "rounding=round": want floor, ceil or nearest`},
		{"rounding=Ceil", nil, `"rounding=Ceil"`},
		{"rounding=", nil, `"rounding="`},
		{"rounding=on", nil, `"rounding=on"`},
		{"rounding=ceil min 1", nil, `"rounding=ceil min 1"`},
		{"maxprocs=off,rounding=ceil", []func(*setting){noMP, rounding(maxprocs.Ceil)}, ""},
		{"insist=on", []func(*setting){insist(true, true)}, ""},
		{"insist=maxprocs", []func(*setting){insist(true, false)}, ""},
		{" insist = memlimit ", []func(*setting){insist(false, true)}, ""},
		{"insist=on,insist=maxprocs", []func(*setting){insist(true, false)}, ""},
		{"insist=on,insist=off", nil, ""},
		{"insist=both", nil, `"insist=both": want on, off, maxprocs or memlimit`},
		{"insist", nil, `"insist": want off or key=value`},
		{"gc=auto", []func(*setting){func(c *setting) { c.ml.GC = true }}, ""},
		{" gc = auto ,gc=off", nil, ""},
		{"gc=on", nil, `"gc=on": want auto or off`},
		{"gc=auto,gc=x", []func(*setting){func(c *setting) { c.ml.GC = true }}, `"gc=x": want auto or off`},
		{"gc=auto,gcshare=0.8", []func(*setting){func(c *setting) { c.ml.GC, c.ml.GCShare = true, 0.8 }}, ""},
		{"gcshare=0.95", nil, `"gcshare=0.95": want a share of the available memory above 0 and at most 0.9, such as 0.7`},
		{"gcshare=0", nil, `"gcshare=0": want a share of the available memory above 0 and at most 0.9, such as 0.7`},
		{"reserve=64Mi", []func(*setting){unseen(64 << 20)}, ""},
		{" reserve = 67108864 ", []func(*setting){unseen(64 << 20)}, ""},
		{"reserve=0.5Gi,reserve=100M", []func(*setting){unseen(100e6)}, ""},
		{"reserve=64Mi,reserve=0", nil, ""},
		{"reserve=64Mi,reserve=-1", []func(*setting){unseen(64 << 20)}, `"reserve=-1": want a quantity of bytes`},
		{"reserve=", nil, `"reserve=": want a quantity of bytes`},
		{"reserve", nil, `"reserve": want off or key=value`},
		{"reserve=64MB", nil, `"reserve=64MB"`},
		{"reserve=64 Mi", nil, `"reserve=64 Mi"`},
		{"reserve=1e9", nil, `"reserve=1e9"`},
		{"reserve=99999999999999999999", nil, `"reserve=99999999999999999999"`},
		{"reserve=8Ei", nil, `"reserve=8Ei"`},
		{"reserve=off", nil, `"reserve=off"`},
		{"oomprofile=/var/fitgo", []func(*setting){func(c *setting) { c.ml.OOMProfile = "/var/fitgo" }}, ""},
		{"oomprofile=fitgo", nil, `"oomprofile=fitgo": want an absolute directory path`},
		{"oomprofile=", nil, `"oomprofile=": want an absolute directory path`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			want := defSetting()
			for _, change := range tc.want {
				change(&want)
			}
			got, err := parseFITGO(tc.in)
			assert.Equal(t, want, got)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			}
		})
	}
}

func FuzzFITGO(f *testing.F) {
	for _, s := range []string{"", "off", "maxprocs=off", "memlimit=off,refresh=250ms", "refresh=off", "x", "refresh=-1s", " off , maxprocs=on ", "rounding=nearest", "rounding=ceil,rounding=x", "insist=on", "insist=memlimit,insist=x", "headroom=off", "headroom=on,headroom=x", "leakguard=off", "leakguard=on,leakguard=x", "reserve=64Mi", "reserve=1Gi,reserve=-1", "reserve=", "nongo=off", "nongo=on,nongo=x", "gc=auto", "gc=auto,gc=x", "gcshare=0.5", "gcshare=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseFITGO(s)
		if got.every != 0 && got.every < 10*time.Millisecond {
			t.Fatalf("FITGO(%q) = %+v: refresh interval %v", s, got, got.every)
		}
		if got.mp.Rounding > maxprocs.Nearest || got.mp.Rounding != 0 && !strings.Contains(s, "rounding") {
			t.Fatalf("FITGO(%q): rounding %d", s, got.mp.Rounding)
		}
		if err == nil && strings.TrimSpace(strings.ReplaceAll(s, ",", "")) == "" && got != defSetting() {
			t.Fatalf("FITGO(%q) = %+v; want the defaults", s, got)
		}
		if got.mp.KeepExisting == got.mp.Insist || got.ml.KeepExisting == got.ml.Insist {
			t.Fatalf("FITGO(%q) = %+v: an insisting knob keeps an earlier value, or one that does not insist overrides it", s, got)
		}
		if (got.mp.Insist || got.ml.Insist) && !strings.Contains(s, "insist") {
			t.Fatalf("FITGO(%q) = %+v: insists without an insist field", s, got)
		}
		if got.ml.NoHeadroom && !strings.Contains(s, "headroom") {
			t.Fatalf("FITGO(%q) = %+v: headroom off without a headroom field", s, got)
		}
		if got.ml.Reserve < 0 || got.ml.Reserve > 0 && !strings.Contains(s, "reserve") {
			t.Fatalf("FITGO(%q) = %+v: reserve without a reserve field", s, got)
		}
		if got.ml.GC && !strings.Contains(s, "auto") {
			t.Fatalf("FITGO(%q) = %+v: GC policy on without gc=auto", s, got)
		}
		if got.ml.NoLeakGuard && !strings.Contains(s, "leakguard") {
			t.Fatalf("FITGO(%q) = %+v: leak guard off without a leakguard field", s, got)
		}
		if got.ml.NoNonGo && !strings.Contains(s, "nongo") {
			t.Fatalf("FITGO(%q) = %+v: non-Go memory off without a nongo field", s, got)
		}
		if err != nil && len(err.Error()) > maxErrText {
			t.Fatalf("FITGO(%q): error of %d bytes", s, len(err.Error()))
		}
	})
}

// maxErrText bounds FITGO's error text: maxErrs fields quoted to 40 bytes
// (envvar.Short; escaped, at most 4 bytes a byte, plus the message), and
// the count.
const maxErrText = maxErrs*(4*40+150) + 60

// TestFITGOErrorIsCapped: a malformed FITGO of any size gives an error of a
// few hundred bytes: the first fields, then how many more. (Before, 40 KB of
// bad fields made a 740 KB error, and one 100 KB field a 100 KB one.)
func TestFITGOErrorIsCapped(t *testing.T) {
	many := strings.Repeat("bogus=1,", 5000)
	_, err := parseFITGO(many)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), maxErrText)
	assert.Equal(t, 3, strings.Count(err.Error(), `unknown setting "bogus"`))
	assert.Contains(t, err.Error(), "FITGO: and 4997 more fields not understood")

	_, err = parseFITGO(strings.Repeat("x", 100000))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), maxErrText)
	assert.Contains(t, err.Error(), `"`+strings.Repeat("x", 40)+`..."`)

	got, err := parseFITGO(many + "memlimit=off")
	require.Error(t, err)
	assert.False(t, got.memlimit, "the good field still applies")
}
