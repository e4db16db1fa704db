package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// This file holds the byte-level helpers shared by the parsers. None of them
// allocates except to build an error.

// unlimitedMemory is the smallest memory value that means "no limit". cgroup
// v1 shows an unlimited memory.limit_in_bytes as the largest page-aligned
// int64 (9223372036854771712 with 4 KiB pages, a little less with larger
// pages); no machine has 4 EiB, so anything from 2^62 up is no limit.
const unlimitedMemory = 1 << 62

// maxMicros is the largest microsecond count that fits a time.Duration.
const maxMicros = math.MaxInt64 / 1000

var (
	errEmpty      = errors.New("empty file")
	errExtraLines = errors.New("unexpected data after the first line")
	errRange      = errors.New("value out of range")
)

// nextLine splits data at the first '\n': line excludes the newline.
func nextLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:]
	}
	return data, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// isBlank reports whether b holds nothing but white space and newlines.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != '\n' && !isSpace(c) {
			return false
		}
	}
	return true
}

// trimSpace removes ASCII white space (not newlines' line structure: callers
// split lines first) at both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// nextField returns the first white-space separated field of b and the rest,
// which starts at the next field.
func nextField(b []byte) (field, rest []byte) {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	i := 0
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	field, rest = b[:i], b[i:]
	for len(rest) > 0 && isSpace(rest[0]) {
		rest = rest[1:]
	}
	return field, rest
}

// parseUint parses a non-empty string of decimal digits. ok is false on any
// other byte and on overflow of uint64.
func parseUint(b []byte) (v uint64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// singleLine returns the only line of a one-line file, trimmed. The file may
// end with a newline and trailing white space; anything else after the first
// line is an error on line 2.
func singleLine(data []byte) ([]byte, error) {
	line, rest := nextLine(data)
	if !isBlank(rest) {
		return nil, &ParseError{Line: 2, Err: errExtraLines}
	}
	line = trimSpace(line)
	if len(line) == 0 {
		return nil, &ParseError{Err: errEmpty}
	}
	return line, nil
}

// invalid returns a ParseError for line n showing the offending text.
func invalid(n int, what string, text []byte) error {
	const maxShown = 64
	if len(text) > maxShown {
		return &ParseError{Line: n, Err: fmt.Errorf("invalid %s %q...", what, text[:maxShown])}
	}
	return &ParseError{Line: n, Err: fmt.Errorf("invalid %s %q", what, text)}
}

// withFile sets the File of a *ParseError made by a parser, which leaves it
// empty, to the absolute path of dir/name.
func withFile(err error, dir, name string) error {
	if err == nil {
		return nil
	}
	var pe *ParseError
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
