// Command fitgo is an empty program that blank-imports fitgo.
package main

import _ "github.com/fitgo/fitgo"

func main() {}
