package main

import (
	"context"
	"fmt"
	"io"
)

// kindMain dispatches to the kind runner (bench/internal/kind), which is being
// built separately; until it lands, it says so.
func kindMain(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench: the kind runner is not available in this build yet (bench/internal/kind)")
	return 2
}
