package cluster

import (
	"context"
	"strings"
	"time"
)

func (r *Runner) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.Exec.Run(ctx, Cmd{Name: name, Args: args})
}

// kindCmd is a kind command for the configured provider.
func (r *Runner) kindCmd(args ...string) Cmd {
	c := Cmd{Name: "kind", Args: args}
	if r.cfg.Provider == ProviderPodman {
		c.Env = []string{"KIND_EXPERIMENTAL_PROVIDER=podman"}
	}
	return c
}

// kubectl runs kubectl against the cluster's context; ns adds -n.
func (r *Runner) kubectl(ctx context.Context, ns bool, args ...string) ([]byte, error) {
	return r.Exec.Run(ctx, r.kubectlCmd(ns, nil, args...))
}

// requestTimeout bounds each request of the runner's kubectl reads: a
// server that stopped answering is retried instead of waited for.
const requestTimeout = "--request-timeout=30s"

// Retries of a kubectl read: attempts in all, and the first back-off (it
// doubles).
const (
	readAttempts = 5
	readBackoff  = time.Second
)

// read runs a kubectl read (get, logs, version) with a request timeout, and
// retries it with back-off: "TLS handshake timeout" and "etcdserver: request
// timed out" are common on a loaded laptop and pass.
func (r *Runner) read(ctx context.Context, ns bool, args ...string) ([]byte, error) {
	args = append(args, requestTimeout)
	wait := readBackoff
	for attempt := 1; ; attempt++ {
		out, err := r.kubectl(ctx, ns, args...)
		if err == nil || ctx.Err() != nil || attempt == readAttempts || notFound(err) || forbidden(err) {
			return out, err
		}
		r.logf("  %v; retrying in %v (%d/%d)", err, wait, attempt+1, readAttempts)
		if err := r.sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait *= 2
	}
}

// notFound reports whether err is kubectl's NotFound, which waiting does not
// change for a read.
func notFound(err error) bool { return strings.Contains(err.Error(), "(NotFound)") }

// forbidden reports whether err is kubectl's Forbidden: RBAC does not change
// by waiting either.
func forbidden(err error) bool { return strings.Contains(err.Error(), "(Forbidden)") }

func (r *Runner) kubectlCmd(ns bool, stdin []byte, args ...string) Cmd {
	var a []string
	if r.kubeconfig != "" {
		a = append(a, "--kubeconfig", r.kubeconfig)
	}
	a = append(a, "--context", r.cfg.Context())
	if ns {
		a = append(a, "-n", r.cfg.Namespace())
	}
	return Cmd{Name: "kubectl", Args: append(a, args...), Stdin: stdin}
}
