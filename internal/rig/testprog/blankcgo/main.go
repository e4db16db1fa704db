//go:build linux && cgo

// Command blankcgo is blank built with cgo, with two more commands: "cmalloc
// N" allocates N MiB with C's malloc, every byte written, and keeps it;
// "cfree" frees it.
package main

/*
#include <stdlib.h>
#include <string.h>

static void *hold(size_t n) {
	void *p = malloc(n);
	if (p) memset(p, 1, n);
	return p;
}
*/
import "C"

import (
	"errors"
	"strconv"
	"unsafe"

	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() {
	var held []unsafe.Pointer
	run.Commands["cmalloc"] = func(args []string) error {
		n, err := 0, errors.New("")
		if len(args) == 1 {
			n, err = strconv.Atoi(args[0])
		}
		if err != nil || n <= 0 {
			return errors.New("want a positive number of MiB")
		}
		p := C.hold(C.size_t(n) << 20)
		if p == nil {
			return errors.New("malloc failed")
		}
		held = append(held, p)
		return nil
	}
	run.Commands["cfree"] = func([]string) error {
		for _, p := range held {
			C.free(p)
		}
		held = nil
		return nil
	}
	run.Run()
}
