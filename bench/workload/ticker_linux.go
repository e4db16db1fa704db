package workload

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

var errNoTimerfd = errors.New("no timerfd")

// netpollTicker is a periodic timerfd read through an *os.File, so that the
// waiting goroutine is parked in the network poller.
type netpollTicker struct{ f *os.File }

func newNetpollTicker(first time.Time, interval time.Duration) (*netpollTicker, error) {
	const clockMonotonic = 1 // CLOCK_MONOTONIC, the clock of Go's monotonic time
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno == syscall.ENOSYS {
		return nil, errNoTimerfd
	}
	if errno != 0 {
		return nil, os.NewSyscallError("timerfd_create", errno)
	}
	spec := struct{ interval, value syscall.Timespec }{
		interval: syscall.NsecToTimespec(int64(interval)),
		// A zero value would disarm the timer.
		value: syscall.NsecToTimespec(max(int64(time.Until(first)), 1)),
	}
	if _, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		syscall.Close(int(fd))
		return nil, os.NewSyscallError("timerfd_settime", errno)
	}
	// A non-blocking descriptor makes a pollable File.
	return &netpollTicker{f: os.NewFile(fd, "timerfd")}, nil
}

// Wait reads the expiration count (one or more ticks).
func (t *netpollTicker) Wait() error {
	var n [8]byte
	_, err := io.ReadFull(t.f, n[:])
	return err
}

func (t *netpollTicker) Close() error { return t.f.Close() }
