package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// sidecar is a running bench/cmd/sidecar.
type sidecar struct {
	cmd  *exec.Cmd
	held results.SidecarLine
	done chan struct{} // closed when the process has exited
	err  error         // Wait's error, once done

	grown   chan struct{}       // closed when it printed its "grown" line
	grownAt results.SidecarLine // that line, once grown is closed
	drained chan struct{}       // closed when its output has been read to the end
}

// sidecarSpec is what a sidecar does: hold size bytes, keep cache bytes of
// page cache, free its memory freeAfter after it holds it (0: never), grow
// by grow bytes when told to (sidecar.grow).
type sidecarSpec struct {
	size, cache int64
	freeAfter   time.Duration
	grow        int64
}

// sidecarTimeout bounds the wait for the sidecar to hold its memory.
const sidecarTimeout = time.Minute

// startSidecar starts the sidecar binary bin as spec says in the cgroups
// whose cgroup.procs files are procs (through the runner's trampoline self),
// and waits until it holds its memory.
func startSidecar(ctx context.Context, self, bin string, procs []string, spec sidecarSpec) (*sidecar, error) {
	if bin == "" || len(procs) == 0 {
		return nil, errors.New("no sidecar binary or no cgroup for it")
	}
	files, _ := json.Marshal(procs)
	size := spec.size
	cmd := exec.Command(self, bin, "-mib", mib(size), "-free-after", spec.freeAfter.String(),
		"-cache-mib", mib(spec.cache), "-grow-mib", mib(spec.grow))
	cmd.Env = append(cleanEnv(os.Environ()), cgexecEnv+"="+string(files))
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &sidecar{cmd: cmd, done: make(chan struct{}), grown: make(chan struct{}), drained: make(chan struct{})}
	lines := make(chan results.SidecarLine, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l, err := results.ParseSidecarLine(sc.Bytes()); err == nil {
				lines <- l
			}
		}
		close(lines)
		s.err = cmd.Wait()
		close(s.done)
	}()
	timer := time.NewTimer(sidecarTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				<-s.done
				return nil, fmt.Errorf("exited before holding its memory: %v%s", s.err, tail(stderr.lines()))
			}
			if l.State == "held" {
				s.held = l
				go func() { // the further lines: a grown one is kept
					defer close(s.drained)
					for l := range lines {
						if l.State == results.SidecarGrown && s.grownAt.State == "" {
							s.grownAt = l
							close(s.grown)
						}
					}
				}()
				return s, nil
			}
		case <-timer.C:
			s.stop()
			return nil, fmt.Errorf("did not hold %d MiB within %v", size>>20, sidecarTimeout)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
	}
}

// mib returns size in MiB, rounded up, for the sidecar's flags.
func mib(size int64) string { return strconv.FormatInt((size+(1<<20)-1)>>20, 10) }

// grow tells the sidecar to grow by its spec's grow bytes (SIGUSR2).
func (s *sidecar) grow() error { return s.cmd.Process.Signal(syscall.SIGUSR2) }

// grownLine returns the line the sidecar printed once it had grown, waiting
// up to wait for it (a growth that the kernel's reclaim slows down may end
// after the workload), and false when it did not print one: it exited, or
// it was never told to grow.
func (s *sidecar) grownLine(wait time.Duration) (results.SidecarLine, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.grown:
		return s.grownAt, true
	case <-s.drained:
	case <-t.C:
	}
	select { // it may have printed the line and exited since
	case <-s.grown:
		return s.grownAt, true
	default:
		return results.SidecarLine{}, false
	}
}

// oomKilled reports whether the sidecar has exited by a SIGKILL the runner
// did not send (before stop): in a memory cgroup, the OOM killer's.
func (s *sidecar) oomKilled() bool {
	select {
	case <-s.done:
	default:
		return false
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

// stop ends the sidecar: SIGTERM, then SIGKILL after 5 s.
func (s *sidecar) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// tailBuffer keeps the last lines written to it.
type tailBuffer struct {
	w lineWriter
	l []string
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if t.w.fn == nil {
		t.w.fn = func(b []byte) {
			t.l = append(t.l, string(b))
			if len(t.l) > 5 {
				t.l = t.l[1:]
			}
		}
	}
	return t.w.Write(p)
}

func (t *tailBuffer) lines() []string { t.w.Flush(); return t.l }
