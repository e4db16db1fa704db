// Command service-fitgo is the service with fitgo blank-imported.
package main

import (
	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/bench/size/service"
)

func main() { service.Main() }
