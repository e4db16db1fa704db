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
	all, err := Parse("")
	require.NoError(t, err)
	assert.Equal(t, All, all)
	vs, err := Parse("fitgo, runtime")
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.Equal(t, "fitgo", vs[0].Name)
	assert.Equal(t, "runtime", vs[1].Name)
	_, err = Parse("fitgo,nope")
	require.ErrorContains(t, err, `unknown variant "nope"`)
	_, err = Parse("fitgo,fitgo")
	require.ErrorContains(t, err, "twice")
}

func TestEveryVariantHasAMainPackage(t *testing.T) {
	for _, v := range All {
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
