package variant

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	all, err := Parse("", 2)
	require.NoError(t, err)
	assert.Equal(t, All, all)
	vs, err := Parse("fitgo, runtime", 2)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.Equal(t, "fitgo", vs[0].Name)
	assert.Equal(t, "runtime", vs[1].Name)
	_, err = Parse("fitgo,nope", 2)
	require.ErrorContains(t, err, `unknown variant "nope"`)
	_, err = Parse("fitgo,fitgo", 2)
	require.ErrorContains(t, err, "twice")

	vs, err = Parse("GOMAXPROCS=3,fitgo-nearest", 2)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.Equal(t, Variant{Name: "GOMAXPROCS=3", Cmd: "cmd/runtime", Env: []string{"GOMAXPROCS=3"}, Doc: "a fixed GOMAXPROCS=3 in the environment"}, vs[0])
	assert.True(t, vs[0].IsStatic())
	assert.Equal(t, []string{"FITGO=rounding=nearest"}, vs[1].Env)
	assert.Equal(t, "fitgo", vs[1].Binary())
	assert.False(t, vs[1].IsStatic())
	for _, bad := range []string{"GOMAXPROCS=0", "GOMAXPROCS=-1", "GOMAXPROCS=01", "GOMAXPROCS=", "GOMAXPROCS=x"} {
		_, err = Parse(bad, 2)
		require.ErrorContains(t, err, "unknown variant", bad)
	}

	vs, err = Parse("fitgo,fitgo-noguard", 2)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.Equal(t, []string{"FITGO=leakguard=off"}, vs[1].Env)
	assert.Equal(t, "fitgo", vs[1].Binary())
	assert.Contains(t, Names(), "fitgo-noguard")

	vs, err = Parse("static", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"GOMAXPROCS=1", "GOMAXPROCS=2", "GOMAXPROCS=3"}, names(vs))
	_, err = Parse("static,GOMAXPROCS=2", 2)
	require.ErrorContains(t, err, `"GOMAXPROCS=2" listed twice`)

	vs, err = Parse("sweep", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"untuned", "runtime", "env", "automaxprocs+automemlimit", "fitgo", "fitgo-floor",
		"fitgo-ceil", "fitgo-nearest", "GOMAXPROCS=1", "GOMAXPROCS=2"}, names(vs))

	vs, err = Parse("all,fitgo-ceil", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"untuned", "runtime", "env", "automaxprocs+automemlimit", "fitgo", "fitgo-floor", "fitgo-ceil"}, names(vs))
}

func names(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestEveryVariantHasAMainPackage(t *testing.T) {
	for _, v := range append(append(All, Rules...), Static(1)) {
		_, err := os.Stat(filepath.Join("..", "..", v.Cmd, "main.go"))
		require.NoError(t, err, v.Name)
	}
}

func TestBinary(t *testing.T) {
	v, ok := Lookup("automaxprocs+automemlimit")
	require.True(t, ok)
	assert.Equal(t, "automaxprocs-automemlimit", v.Binary())
}

func TestDownwardEnv(t *testing.T) {
	assert.Equal(t, []string{"GOMAXPROCS=1", "GOMEMLIMIT=268435456"}, DownwardEnv(0.5, 256<<20, 8, 1<<34))
	assert.Equal(t, []string{"GOMAXPROCS=1", "GOMEMLIMIT=17179869184"}, DownwardEnv(1, 0, 8, 1<<34))
	assert.Equal(t, []string{"GOMAXPROCS=2", "GOMEMLIMIT=17179869184"}, DownwardEnv(1.5, 0, 8, 1<<34))
	assert.Equal(t, []string{"GOMAXPROCS=8"}, DownwardEnv(0, 0, 8, 0))
}

// TestUntunedGODEBUG checks that the untuned binary gets the GODEBUG defaults
// of a go ≤1.24 main module, and the runtime binary those of the bench module.
func TestUntunedGODEBUG(t *testing.T) {
	godebug := func(pkg string) string {
		out, err := exec.Command("go", "list", "-f", "{{.DefaultGODEBUG}}", pkg).Output()
		require.NoError(t, err, pkg)
		return strings.TrimSpace(string(out))
	}
	u := strings.Split(godebug("../../cmd/untuned"), ",")
	assert.Contains(t, u, "containermaxprocs=0")
	assert.Contains(t, u, "updatemaxprocs=0")
	assert.NotContains(t, godebug("../../cmd/runtime"), "containermaxprocs=0")
}
