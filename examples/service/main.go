// Command service is a service that logs JSON: main sets the handler, and
// fitgo's start-up lines, logged at its first reading of the limits, go
// through it. It does not log fitgo.Startup() again, which would repeat
// them; it serves it on a debug endpoint.
//
//	go run ./examples/service -addr localhost:8080   # then: curl localhost:8080/debug/fitgo
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/fitgo/fitgo" // named for fitgo.Startup(); a blank import is all it takes to fit the runtime
)

func main() {
	addr := flag.String("addr", "", "serve /debug/fitgo at this address (empty: exit at once)")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil))) // fitgo logs here too
	http.HandleFunc("/debug/fitgo", func(w http.ResponseWriter, _ *http.Request) {
		r := fitgo.Startup()
		fmt.Fprintf(w, "%v\n%v\n", r.MaxProcs.Status(), r.MemLimit.Status())
	})
	if *addr != "" {
		slog.Error("serve", "err", http.ListenAndServe(*addr, nil))
	}
}
