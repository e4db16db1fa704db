//go:build unix

package workload

import (
	"errors"
	"syscall"
)

// holdOutside holds n bytes outside the Go runtime through via ("cgo" or
// "mmap"), every page written, until release is called.
func holdOutside(via string, n int) (release func(), err error) {
	switch via {
	case "cgo":
		return cmalloc(n)
	case "mmap":
		b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return func() { syscall.Munmap(b) }, nil
	}
	return nil, errors.New("unknown -outside-via " + via + " (want cgo or mmap)")
}
