// Command service-plain is the service alone.
package main

import "github.com/fitgo/fitgo/bench/size/service"

func main() { service.Main() }
