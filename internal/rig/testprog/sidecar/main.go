//go:build linux

// Command sidecar is another process next to a test program: it holds the
// number of MiB given as its argument resident (anonymous memory, every
// page touched) and prints "held" once it does; on the stdin command
// "free" it unmaps them and prints "freed". It exits when stdin is closed.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: sidecar MiB")
		os.Exit(2)
	}
	mem, err := syscall.Mmap(-1, 0, n<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mmap:", err)
		os.Exit(1)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	fmt.Println("held")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "free" && mem != nil {
			if err := syscall.Munmap(mem); err != nil {
				fmt.Fprintln(os.Stderr, "munmap:", err)
				os.Exit(1)
			}
			mem = nil
			fmt.Println("freed")
		}
	}
}
