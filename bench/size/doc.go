// Package size holds the programs that measure what a blank import adds to
// a binary (docs/benchmark.md, "Binary size"): an empty program, and a small
// net/http + log/slog + encoding/json service (package service), each bare,
// with fitgo, and with automaxprocs + automemlimit.
//
//	for p in empty fitgo autos service-plain service-fitgo service-autos; do
//	  go build -C bench -o /tmp/size/$p ./size/$p
//	  go build -C bench -ldflags=-s\ -w -o /tmp/size/$p.stripped ./size/$p
//	done
package size
