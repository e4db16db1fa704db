package workload

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
)

// peakRSS returns VmHWM from /proc/self/status, the high-water mark of this
// process image, or getrusage's ru_maxrss where /proc is missing (which on
// Linux also counts the image before the last execve).
func peakRSS() int64 {
	if v := procStatusBytes("VmHWM:"); v > 0 {
		return v
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		return maxRSSBytes(ru.Maxrss)
	}
	return 0
}

// rss returns VmRSS from /proc/self/status, or 0.
func rss() int64 { return procStatusBytes("VmRSS:") }

// procStatusBytes returns the "<key> N kB" field of /proc/self/status in bytes.
func procStatusBytes(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusField(b, key)
}

func statusField(status []byte, key string) int64 {
	for _, l := range bytes.Split(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(l, []byte(key))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n <<= 10
		}
		return n
	}
	return 0
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
