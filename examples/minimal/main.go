// Command minimal is the whole of using fitgo: one blank import.
package main

import _ "github.com/fitgo/fitgo" // GOMAXPROCS and GOMEMLIMIT from the container's limits, followed every second

func main() {
	// Your service: it runs with the runtime fitted to its container.
}
