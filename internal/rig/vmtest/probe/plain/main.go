//go:build linux

// Command plain is the vm tests' probe that does not use fitgo: it reports what
// the Go runtime alone chose, and it carries the small tools the guest's
// scenario scripts need and busybox lacks.
//
//	plain runtime -scenario S                       GOMAXPROCS and GOMEMLIMIT as the runtime set them
//	plain files -scenario S FILE...                 the content of files, as the kernel shows them
//	plain write -scenario S FILE VALUE [FILE VALUE]... write cgroup files and print when
//	plain cgns [-remount DIR] CMD [ARG]...          run CMD in new cgroup and mount namespaces
//
// Each command but cgns prints one line "FITGO-RESULT {json}" with the fields
// "scenario" and "probe" (the command's name).
//
// This repository's go.mod says go 1.23, so a main package here gets the
// GODEBUG defaults of Go 1.23, which turn the runtime's container support off.
// The directives below give this program the defaults of Go 1.25 and later, so
// that "plain runtime" shows what a current Go program does by itself.
//
//go:debug containermaxprocs=1
//go:debug updatemaxprocs=1
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: plain runtime|files|write|cgns ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "runtime":
		runtimeCmd(args)
	case "files":
		filesCmd(args)
	case "write":
		writeCmd(args)
	case "cgns":
		cgnsCmd(args)
	case "cgns-child":
		cgnsChild(args)
	default:
		fail("unknown command " + cmd)
	}
}

// fail reports a failure on the console in the form the test collects.
func fail(msg string) {
	fmt.Printf("FITGO-ERROR plain: %s\n", msg)
	os.Exit(1)
}

func emit(scenario, probe string, v map[string]any) {
	v["scenario"] = scenario
	v["probe"] = probe
	b, err := json.Marshal(v)
	if err != nil {
		fail(err.Error())
	}
	// One write per line, so that lines of concurrent probes do not mix.
	os.Stdout.Write(append([]byte("FITGO-RESULT "), append(b, '\n')...))
}

func flags(name string, args []string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	scenario := fs.String("scenario", "", "scenario name printed with the result")
	if err := fs.Parse(args); err != nil {
		fail(err.Error())
	}
	if *scenario == "" {
		fail(name + ": -scenario is required")
	}
	return fs, scenario
}

func runtimeCmd(args []string) {
	_, scenario := flags("runtime", args)
	var defaultGODEBUG string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "DefaultGODEBUG" {
				defaultGODEBUG = s.Value
			}
		}
	}
	emit(*scenario, "runtime", map[string]any{
		"gomaxprocs":      runtime.GOMAXPROCS(0),
		"gomemlimit":      debug.SetMemoryLimit(-1),
		"numcpu":          runtime.NumCPU(),
		"go":              runtime.Version(),
		"default_godebug": defaultGODEBUG,
		"godebug_env":     os.Getenv("GODEBUG"),
	})
}

func filesCmd(args []string) {
	fs, scenario := flags("files", args)
	files := map[string]string{}
	errs := map[string]string{}
	for _, name := range fs.Args() {
		b, err := os.ReadFile(name)
		if err != nil {
			errs[name] = err.Error()
			continue
		}
		files[name] = string(b)
	}
	emit(*scenario, "files", map[string]any{"files": files, "errors": errs})
}

func writeCmd(args []string) {
	fs, scenario := flags("write", args)
	kv := fs.Args()
	if len(kv) == 0 || len(kv)%2 != 0 {
		fail("write: want FILE VALUE pairs")
	}
	start := time.Now()
	for i := 0; i < len(kv); i += 2 {
		// One write(2) of the value, as "echo VALUE > FILE" does.
		if err := os.WriteFile(kv[i], []byte(kv[i+1]+"\n"), 0o644); err != nil {
			fail(fmt.Sprintf("write %s: %v", kv[i], err))
		}
	}
	end := time.Now()
	emit(*scenario, "write", map[string]any{
		"start_unix_nano": start.UnixNano(),
		"end_unix_nano":   end.UnixNano(),
		"written":         kv,
	})
}

// cgnsCmd runs a command in a new cgroup namespace (and mount namespace, so a
// remount stays private to it). The namespace's root is the cgroup of this
// process, so /proc/self/cgroup shows "0::/" in the command.
func cgnsCmd(args []string) {
	fs := flag.NewFlagSet("cgns", flag.ExitOnError)
	remount := fs.String("remount", "", "replace the cgroup2 mount at this directory with a new one made in the namespace, as container runtimes do")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fail("usage: plain cgns [-remount DIR] CMD [ARG]...")
	}
	self, err := os.Executable()
	if err != nil {
		fail(err.Error())
	}
	child := exec.Command(self, append([]string{"cgns-child", *remount}, fs.Args()...)...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWCGROUP | syscall.CLONE_NEWNS}
	if err := child.Run(); err != nil {
		fail(fmt.Sprintf("cgns: %v", err))
	}
}

// cgnsChild runs inside the new namespaces: it remounts if asked and then
// replaces itself with the command.
func cgnsChild(args []string) {
	if len(args) < 2 {
		fail("cgns-child: want DIR CMD")
	}
	dir, argv := args[0], args[1:]
	if dir != "" {
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			fail(fmt.Sprintf("cgns: make / private: %v", err))
		}
		// The kernel refuses to mount the same cgroup2 file system on the
		// root of one of its own mounts (EBUSY), so detach the outer one
		// first; in this private mount namespace only.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			fail(fmt.Sprintf("cgns: unmount %s: %v", dir, err))
		}
		if err := syscall.Mount("cgroup2", dir, "cgroup2", 0, ""); err != nil {
			fail(fmt.Sprintf("cgns: mount cgroup2 at %s: %v", dir, err))
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fail(err.Error())
	}
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		fail(fmt.Sprintf("cgns: exec %s: %v", path, err))
	}
}
