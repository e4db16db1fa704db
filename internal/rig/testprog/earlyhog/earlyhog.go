//go:build linux

// Package earlyhog leaves the process three free file descriptors from its
// init, before fitgo's, as a busy server at its limit would: it lowers
// RLIMIT_NOFILE to 64 and holds all but three. SIGUSR1 frees them.
package earlyhog

import (
	"os"
	"os/signal"
	"syscall"
)

func init() {
	lim := syscall.Rlimit{Cur: 64, Max: 64}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		panic(err)
	}
	var held []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	for _, f := range held[len(held)-3:] {
		f.Close()
	}
	held = held[:len(held)-3]
	free := make(chan os.Signal, 1)
	signal.Notify(free, syscall.SIGUSR1)
	go func() {
		<-free
		for _, f := range held {
			f.Close()
		}
	}()
}
