package memlimit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
)

// readMemTotal reads MemTotal from proc/meminfo in fsys.
func readMemTotal(fsys fs.FS) (int64, error) {
	data, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, err
	}
	n, err := parseMemTotal(data)
	if err != nil {
		return 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return n, nil
}

// parseMemTotal returns MemTotal in bytes from the content of /proc/meminfo,
// whose lines read "MemTotal:       24554808 kB".
func parseMemTotal(data []byte) (int64, error) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		rest, ok := bytes.CutPrefix(line, []byte("MemTotal:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return 0, fmt.Errorf("malformed MemTotal line %q", line)
		}
		n, err := strconv.ParseUint(string(fields[0]), 10, 63)
		if err != nil {
			return 0, fmt.Errorf("malformed MemTotal line %q: %w", line, err)
		}
		mult := uint64(1)
		if len(fields) == 2 {
			if string(fields[1]) != "kB" {
				return 0, fmt.Errorf("malformed MemTotal line %q: unit %q", line, fields[1])
			}
			mult = 1024
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("malformed MemTotal line %q: too large", line)
		}
		if n == 0 {
			return 0, fmt.Errorf("MemTotal is zero")
		}
		return int64(n * mult), nil
	}
	return 0, errors.New("no MemTotal line")
}
