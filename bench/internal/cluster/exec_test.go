package cluster

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCmdString(t *testing.T) {
	c := Cmd{Name: "kubectl", Args: []string{"patch", "pod", "p", "--patch", `{"a":"b c"}`, "", "it's"}}
	assert.Equal(t, `kubectl patch pod p --patch '{"a":"b c"}' '' 'it'\''s'`, c.String())
	assert.Equal(t, "kind create cluster --name x --config /a/b.yaml", Cmd{Name: "kind", Args: []string{"create", "cluster", "--name", "x", "--config", "/a/b.yaml"}}.String())
}

func TestOSExecutor(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	ctx := context.Background()
	var progress bytes.Buffer
	x := OSExecutor{Progress: &progress}

	out, err := x.Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "cat; echo err >&2"}, Stdin: []byte("in\n")})
	require.NoError(t, err)
	assert.Equal(t, "in\n", string(out))
	assert.Empty(t, progress.String(), "not streamed")

	out, err = x.Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "echo building; echo step >&2"}, Stream: true})
	require.NoError(t, err)
	assert.Equal(t, "building\n", string(out))
	assert.Contains(t, progress.String(), "building\n")
	assert.Contains(t, progress.String(), "step\n")

	_, err = x.Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "echo partial; echo 'no such cluster' >&2; exit 3"}})
	var ee *ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, 3, ee.Code)
	assert.Contains(t, err.Error(), "no such cluster")

	_, err = x.Run(ctx, Cmd{Name: "no-such-program-fitgo"})
	assert.Error(t, err)

	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = x.Run(ctx, Cmd{Name: "sleep", Args: []string{"10"}})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
