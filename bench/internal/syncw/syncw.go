// Package syncw serialises the writes of goroutines that share one writer,
// such as the stdout and stderr copiers of several child processes.
package syncw

import (
	"io"
	"sync"
)

// Writer writes to W one Write at a time.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(p)
}
