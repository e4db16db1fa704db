package local

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// enableControllers makes the cpu and memory controllers available to the
// children of the v2 parent, by writing its cgroup.subtree_control.
//
// A v2 cgroup other than the root may not both hold processes and enable
// controllers for its children. When the parent is the runner's own cgroup
// (a subtree delegated to the user, e.g. by systemd-run --user -p
// Delegate=yes), the runner moves every process of that cgroup (itself and
// its `go run` parent, typically) into a leaf child first, as container
// runtimes do; Close moves them back.
func (h *Host) enableControllers(own string) error {
	parent := h.CPUParent
	sc := path.Join(parent, "cgroup.subtree_control")
	cur, err := h.fs.read(sc)
	if err != nil {
		return err
	}
	var need []string
	for _, c := range []string{"cpu", "memory"} {
		if !slices.Contains(strings.Fields(cur), c) {
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return nil
	}
	if avail, err := h.fs.read(path.Join(parent, "cgroup.controllers")); err == nil {
		for _, c := range need {
			if !slices.Contains(strings.Fields(avail), c) {
				return fmt.Errorf("the %s controller is not available in %s (cgroup.controllers: %q): it is not delegated to this cgroup",
					c, parent, strings.TrimSpace(avail))
			}
		}
	}
	enable := "+" + strings.Join(need, " +")
	err = h.fs.write(sc, enable)
	if err != nil && errors.Is(err, syscall.EBUSY) && parent == own {
		if err := h.evacuate(parent); err != nil {
			return err
		}
		err = h.fs.write(sc, enable)
	}
	if err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w (%s holds processes, so it cannot enable controllers for child cgroups)", err, parent)
		}
		return err
	}
	if h.delegated == nil {
		h.delegated = &delegation{parent: parent}
	}
	h.delegated.enabled = need
	return nil
}

// evacuate moves every process of parent into a new leaf child.
func (h *Host) evacuate(parent string) error {
	leaf := path.Join(parent, fmt.Sprintf("%s%d-runner", NamePrefix, pid()))
	if err := h.fs.mkdir(leaf); err != nil {
		return err
	}
	h.delegated = &delegation{parent: parent, leaf: leaf}
	if err := h.moveAll(parent, leaf); err != nil {
		return fmt.Errorf("moving the processes of %s into %s: %w", parent, leaf, err)
	}
	return nil
}

// moveAll moves the processes listed in from's cgroup.procs to to.
func (h *Host) moveAll(from, to string) error {
	procs, err := h.fs.read(path.Join(from, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, p := range strings.Fields(procs) {
		if _, err := strconv.Atoi(p); err != nil {
			continue
		}
		if err := h.fs.write(path.Join(to, "cgroup.procs"), p); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

// Close undoes what enableControllers did: it disables the controllers it
// enabled and moves the evacuated processes back. Run groups must be removed
// first.
func (h *Host) Close() error {
	d := h.delegated
	if d == nil {
		return nil
	}
	h.delegated = nil
	var errs []error
	if len(d.enabled) > 0 {
		if err := h.fs.write(path.Join(d.parent, "cgroup.subtree_control"), "-"+strings.Join(d.enabled, " -")); err != nil {
			errs = append(errs, err)
		}
	}
	if d.leaf != "" {
		if err := h.moveAll(d.leaf, d.parent); err != nil {
			errs = append(errs, err)
		} else if err := h.fs.rmdir(d.leaf); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
