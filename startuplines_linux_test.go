package fitgo

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// TestStartupLinesThroughMainsHandler runs the README's service
// (examples/service), whose main sets a JSON handler: the blank import's
// start-up lines go through it at the first reading, a Warn line for each
// setting not understood with the error as its message, and the line of
// what was done once, not repeated by the program. The wait is only a cap
// for a hung program.
func TestStartupLinesThroughMainsHandler(t *testing.T) {
	if _, err := cgroup.Read(); errors.Is(err, cgroup.ErrNoCgroup) {
		t.Skip("no cgroup: nothing to follow, so the lines go out at init")
	}
	prog := cgv1.Build(t, "./examples/service")
	cmd := exec.Command(prog, "-addr", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOMAXPROCS" && k != "GOMEMLIMIT" && k != "GODEBUG" && !strings.HasPrefix(k, "FITGO") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "FITGO=rounding=round", "FITGO_CPU_LIMIT=500", "FITGO_MEMORY_LIMIT=1Gi")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	hung := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer hung.Stop()

	type line struct {
		Level, Msg string
		GOMEMLIMIT struct{ Changed bool }
	}
	var lines []line
	for sc := bufio.NewScanner(stderr); sc.Scan(); {
		var l line
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "not JSON: %s", sc.Text())
		t.Log(sc.Text())
		if lines = append(lines, l); strings.HasPrefix(l.Msg, "fitgo: fitted") {
			cmd.Process.Kill() // the service runs on; the lines are out
		}
	}
	cmd.Wait()
	require.Len(t, lines, 3)
	assert.Equal(t, line{Level: "WARN", Msg: `fitgo: FITGO: "rounding=round": want floor, ceil or nearest`}, lines[0])
	assert.Equal(t, "WARN", lines[1].Level)
	assert.Contains(t, lines[1].Msg, `fitgo: maxprocs: FITGO_CPU_LIMIT: "500": a bare integer is millicores`)
	assert.Equal(t, "INFO", lines[2].Level)
	assert.Equal(t, "fitgo: fitted the Go runtime to the container", lines[2].Msg)
	assert.True(t, lines[2].GOMEMLIMIT.Changed, "FITGO_MEMORY_LIMIT=1Gi")
}
