// Command empty is an empty program: the base of the size figures.
package main

func main() {}
