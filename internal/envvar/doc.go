// Package envvar parses the environment variables that decide whether fitgo
// touches the Go runtime, with the rules of the runtime of the toolchain that
// builds it (they changed in Go 1.26), and FITGO_CPU_LIMIT, FITGO_MEMORY_LIMIT.
// The parsers are pure; Startup gives the environment the process started with.
package envvar
