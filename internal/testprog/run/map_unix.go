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
