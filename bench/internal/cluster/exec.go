package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/fitgo/fitgo/bench/internal/syncw"
)

// Cmd is one external command: kind, kubectl or docker.
type Cmd struct {
	Name  string   // program, looked up in PATH
	Args  []string // arguments
	Dir   string   // working directory; empty for the current one
	Env   []string // KEY=value added to the environment
	Stdin []byte   // standard input, e.g. a manifest for "kubectl create -f -"
	// Stream asks the executor to copy the command's output to the user as it
	// runs (docker build, kind create cluster): long steps show their progress.
	Stream bool
}

// String is the command as a shell would show it, after its extra
// environment; arguments with spaces or shell metacharacters are quoted.
// Stdin is not shown.
func (c Cmd) String() string {
	parts := make([]string, 0, len(c.Env)+len(c.Args)+1)
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		parts = append(parts, k+"="+shellQuote(v))
	}
	for _, a := range append([]string{c.Name}, c.Args...) {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Executor runs external commands. The runner does everything through it, so
// that its tests can replace the cluster with a fake.
type Executor interface {
	// Run runs c and returns its standard output. A non-zero exit is an error
	// that includes the command's standard error.
	Run(ctx context.Context, c Cmd) ([]byte, error)
}

// OSExecutor runs commands with os/exec. Streamed commands copy their output
// to Progress (standard error of the runner).
type OSExecutor struct {
	Progress io.Writer
}

// ExitError is a command that ran and failed.
type ExitError struct {
	Cmd    string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", e.Cmd, e.Code)
	}
	return fmt.Sprintf("%s: exit status %d: %s", e.Cmd, e.Code, msg)
}

// Run implements Executor.
func (x OSExecutor) Run(ctx context.Context, c Cmd) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Stream && x.Progress != nil {
		// Both streams are copied by their own goroutines: serialise them.
		p := &syncw.Writer{W: x.Progress}
		cmd.Stdout = io.MultiWriter(&stdout, p)
		cmd.Stderr = io.MultiWriter(&stderr, p)
	}
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ctx.Err() == nil {
		return stdout.Bytes(), &ExitError{Cmd: c.String(), Code: ee.ExitCode(), Stderr: lastLines(stderr.String(), 20)}
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w", c.String(), ctx.Err())
	}
	return stdout.Bytes(), fmt.Errorf("%s: %w", c.String(), err)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
