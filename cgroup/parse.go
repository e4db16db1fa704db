package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

var (
	errEmpty      = errors.New("empty file")
	errExtraLines = errors.New("unexpected data after the first line")
	errRange      = errors.New("value out of range")
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
	const maxShown = 64
	if len(text) > maxShown {
		return &parseError{Line: n, Err: fmt.Errorf("invalid %s %q...", what, text[:maxShown])}
	}
	return &parseError{Line: n, Err: fmt.Errorf("invalid %s %q", what, text)}
}

// withFile names the file dir/name in a parser's *parseError.
func withFile(err error, dir, name string) error {
	if err == nil {
		return nil // before errors.As, whose target allocates
	}
	var pe *parseError
	if errors.As(err, &pe) && pe.File == "" {
		pe.File = joinPath(dir, name)
	}
	return err
}

// joinPath joins an absolute clean directory and a name.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// trimSpace removes white space other than newlines at both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// nextField returns the first white-space separated field of b and the rest
// from the next field on.
func nextField(b []byte) (field, rest []byte) {
	b = trimSpace(b)
	i := 0
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	return b[:i], trimSpace(b[i:])
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

// singleLine returns the only line of a one-line file, trimmed. Anything but
// white space after the first line is an error on line 2.
func singleLine(data []byte) ([]byte, error) {
	line, rest := nextLine(data)
	if len(bytes.Trim(rest, " \t\r\v\f\n")) > 0 {
		return nil, &parseError{Line: 2, Err: errExtraLines}
	}
	if line = trimSpace(line); len(line) == 0 {
		return nil, &parseError{Err: errEmpty}
	}
	return line, nil
}
