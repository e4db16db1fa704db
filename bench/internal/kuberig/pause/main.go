// Command pause is the sandbox ("pause") container of the TestKubelet* node:
// it holds the pod's namespaces, doing nothing until it is told to stop. The
// node cannot pull registry.k8s.io/pause, so the rig builds this image itself.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
