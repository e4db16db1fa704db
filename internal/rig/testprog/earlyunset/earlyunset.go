// Package earlyunset changes the environment in its init, before fitgo's
// (Go initialises independent packages in import-path order): it unsets
// GOMAXPROCS and sets GOMEMLIMIT. The runtime read the environment the
// process started with, and so must fitgo.
package earlyunset

import "os"

func init() {
	os.Unsetenv("GOMAXPROCS")
	os.Setenv("GOMEMLIMIT", "1GiB")
}
