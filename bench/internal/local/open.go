package local

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fitgo/fitgo/cgroup"
)

func pid() int { return os.Getpid() }

// AccessError reports that the runner cannot create and limit cgroups.
type AccessError struct {
	Version cgroup.Version
	Tried   []string // the parent directories tried
	Err     error
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("cannot create limited cgroups under %s: %v", strings.Join(e.Tried, " or "), e.Err)
}

func (e *AccessError) Unwrap() error { return e.Err }

// Help says what the runner needs, for the user.
func (e *AccessError) Help() string {
	var b strings.Builder
	b.WriteString("The local runner creates a cgroup per run to give it a CPU quota and a memory limit. It needs one of:\n")
	b.WriteString("  - root: sudo \"$(go env GOROOT)/bin/go\" run -C bench . local ...\n")
	if e.Version == cgroup.V2 {
		b.WriteString("  - a delegated cgroup v2 subtree with the cpu and memory controllers, with the runner started inside it, e.g.\n")
		b.WriteString("      systemd-run --user --scope -p Delegate=yes go run -C bench . local ...\n")
		b.WriteString("    (the runner then moves the scope's processes into a leaf and creates its cgroups next to it),\n")
		b.WriteString("    or such a subtree passed with -cgroup-parent DIR\n")
	} else {
		b.WriteString("  - write access to the cpu and memory cgroup v1 hierarchies (cgroup v1 has no safe delegation: use root)\n")
	}
	b.WriteString("  - or -in-place, to measure in the current cgroup with whatever limits it has (e.g. inside a pod)")
	return b.String()
}

// Open finds where to create run cgroups, from the process's cgroups as fitgo's
// cgroup package sees them in the file system under root ("/" normally),
// prepares it (v2: enables the cpu and memory controllers for children),
// removes stale cgroups of dead runners, and checks that a limited cgroup can
// be created. parent, if set, is the v2 directory to use. The error is an
// *AccessError when the runner lacks the rights.
func Open(root, parent string) (*Host, error) {
	return open(sysfs{root: root}, parent)
}

func open(sfs sysfs, parent string) (*Host, error) {
	lim, err := cgroup.ReadFS(os.DirFS(sfs.real("/")))
	if lim.CPU.Version == 0 && lim.Memory.Version == 0 {
		if err == nil {
			err = errors.New("no cgroup hierarchy with the cpu or memory controller is mounted")
		}
		return nil, err
	}
	h, herr := hostFromLimits(sfs, lim, parent)
	if herr != nil {
		return nil, herr
	}
	name := fmt.Sprintf("%s%d-probe", NamePrefix, pid())
	if h.Version == cgroup.V1 {
		h.RemoveStale()
		if err := h.Probe(name); err != nil {
			return nil, &AccessError{Version: cgroup.V1, Tried: []string{h.CPUParent, h.MemoryParent}, Err: err}
		}
		return h, nil
	}
	own := lim.CPU.Dir
	if own == "" {
		own = lim.Memory.Dir
	}
	candidates := []string{h.CPUParent}
	if parent == "" && own != "" && own != h.CPUParent {
		candidates = append(candidates, own)
	}
	var errs []error
	for _, c := range candidates {
		h.CPUParent, h.MemoryParent = c, c
		err := h.enableControllers(own)
		if err == nil {
			h.RemoveStale()
			err = h.Probe(name)
		}
		if err == nil {
			return h, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", c, err))
		h.Close()
	}
	return nil, &AccessError{Version: cgroup.V2, Tried: candidates, Err: errors.Join(errs...)}
}
