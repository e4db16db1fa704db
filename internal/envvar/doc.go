// Package envvar parses the environment variables that decide whether fitgo
// touches the Go runtime, with exactly the rules of the runtime that reads
// them at start-up, plus fitgo's own FITGO variable.
//
// The runtime's rules changed over time: up to Go 1.25 it parsed integers with
// a hand-written routine that accepts a leading '-' but not a leading '+';
// from Go 1.26 it uses strconv.ParseInt, which accepts both. The parsers here
// follow the rules of the toolchain that builds them (see atoi_*.go), because
// that toolchain's runtime is the one that read the variables.
//
// The parsers are pure functions; Startup gives the environment the process
// started with, which is what the runtime read.
package envvar
