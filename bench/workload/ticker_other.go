//go:build !linux

package workload

import (
	"errors"
	"time"
)

var errNoTimerfd = errors.New("no timerfd")

type netpollTicker struct{ sleepTicker }

func newNetpollTicker(time.Time, time.Duration) (*netpollTicker, error) { return nil, errNoTimerfd }
