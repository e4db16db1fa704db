//go:build unix

package run

import (
	"os"
	"syscall"
)

// mapped keeps the mappings of the command map; sink is what was read.
var (
	mapped [][]byte
	sink   byte
)

// mapFile maps the file path shared and reads every page of it.
func mapFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	for i := 0; i < len(b); i += 4096 {
		sink += b[i]
	}
	mapped = append(mapped, b)
	return nil
}

// anon is what the command anon holds.
var anon [][]byte

func init() {
	Commands["anon"] = func(args []string) error {
		n, err := mibs(args)
		if err != nil {
			return err
		}
		b, err := syscall.Mmap(-1, 0, n<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		anon = append(anon, b)
		return nil
	}
	Commands["unanon"] = func([]string) error {
		for _, b := range anon {
			if err := syscall.Munmap(b); err != nil {
				return err
			}
		}
		anon = nil
		return nil
	}
}
