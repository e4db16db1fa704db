package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
)

// parseError is a malformed file. Parsers leave File empty for withFile.
type parseError struct {
	File string // absolute path
	Line int    // 1-based; 0 when the whole file is at fault
	Err  error
}

// Error returns "cgroup: FILE:LINE: what is wrong", without ":LINE" for 0.
func (e *parseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("cgroup: %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("cgroup: %s: %v", e.File, e.Err)
}

func (e *parseError) Unwrap() error { return e.Err }

// invalid returns a parseError for line n showing the offending text.
func invalid(n int, what string, text []byte) error {
	format := "invalid %s %q"
	if len(text) > 64 {
		text, format = text[:64], format+"..."
	}
	return &parseError{Line: n, Err: fmt.Errorf(format, what, text)}
}

// withFile names the file dir/name in the *parseError of a parser.
func withFile(err error, dir, name string) error {
	if pe, ok := err.(*parseError); ok && pe.File == "" {
		pe.File = joinPath(dir, name)
	}
	return err
}

// joinPath joins an absolute clean directory and a name.
func joinPath(dir, name string) string { return strings.TrimSuffix(dir, "/") + "/" + name }

// maxMicros is the largest microsecond count that fits a time.Duration.
const maxMicros = math.MaxInt64 / 1000

// The byte-level helpers below allocate nothing.

// nextLine splits data after the first '\n', which line excludes.
func nextLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:]
	}
	return data, nil
}

// spaces is the white space around fields, newlines aside.
const spaces = " \t\r\v\f"

// nextField returns the first white-space separated field of b and the rest
// from the next field on.
func nextField(b []byte) (field, rest []byte) {
	b = bytes.Trim(b, spaces)
	if i := bytes.IndexAny(b, spaces); i >= 0 {
		return b[:i], bytes.Trim(b[i:], spaces)
	}
	return b, nil
}

// parseUint parses a non-empty string of decimal digits that fits a uint64.
func parseUint(b []byte) (v uint64, ok bool) {
	for _, c := range b {
		d := uint64(c - '0')
		if c < '0' || c > '9' || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, len(b) > 0
}

// statValue finds key in a "key value" file such as memory.stat, or "key
// value unit" for a unit such as /proc/self/status's "kB", and returns its
// value, a number of at most limit; found is false when no line has the
// key, and other lines are not looked at.
func statValue(data []byte, key string, limit uint64, unit string) (v uint64, found bool, err error) {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		if k, val := nextField(line); string(k) == key {
			num, rest := nextField(val)
			u, ok := parseUint(num)
			if !ok || u > limit || string(rest) != unit {
				return 0, false, invalid(n, string(k), line)
			}
			return u, true, nil
		}
	}
	return 0, false, nil
}

// statCounts sets the count of each key that data has, as statValue reads
// it: a value that is not a number is an error on its line, other keys are
// ignored.
func statCounts(data []byte, keys []string, counts ...*uint64) error {
	for i, key := range keys {
		v, found, err := statValue(data, key, math.MaxUint64, "")
		if err != nil {
			return err
		} else if found {
			*counts[i] = v
		}
	}
	return nil
}

// parseCount parses a one-line file holding one count of at most limit,
// such as cpuacct.usage, memory.current or memory.failcnt.
func parseCount(data []byte, what string, limit uint64) (int64, error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, err
	}
	v, ok := parseUint(line)
	if !ok || v > limit {
		return 0, invalid(1, what, line)
	}
	return int64(v), nil
}

// singleLine returns the only line of a one-line file, trimmed. Anything but
// white space after the first line is an error on line 2.
func singleLine(data []byte) ([]byte, error) {
	line, rest := nextLine(data)
	if len(bytes.Trim(rest, spaces+"\n")) > 0 {
		return nil, &parseError{Line: 2, Err: errors.New("unexpected data after the first line")}
	}
	if line = bytes.Trim(line, spaces); len(line) == 0 {
		return nil, &parseError{Err: errors.New("empty file")}
	}
	return line, nil
}
