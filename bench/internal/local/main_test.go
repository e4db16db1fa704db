package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Test helper modes of the test binary, selected by environment variables:
// the cgroup trampoline (CgExec), a memory hog for the OOM test, and Main for
// the test without privileges.
const (
	hogEnv  = "FITGO_BENCH_TEST_HOG_MIB"
	mainEnv = "FITGO_BENCH_TEST_MAIN"
)

func TestMain(m *testing.M) {
	CgExec()
	if v := os.Getenv(hogEnv); v != "" {
		hog(v)
	}
	if os.Getenv(mainEnv) != "" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// hog touches mib MiB of memory, then exits 0 ("survived").
func hog(v string) {
	mib, _ := strconv.Atoi(v)
	var keep [][]byte
	for range mib {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	time.Sleep(100 * time.Millisecond)
	fmt.Println("survived", len(keep))
	os.Exit(0)
}
