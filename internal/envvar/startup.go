package envvar

import (
	"bytes"
	"os"
	"runtime"
	"sync"
)

// Startup returns the environment the process started with, which is what
// the runtime read: on Linux from /proc/self/environ (read once), so that an
// earlier init's os.Setenv does not change what fitgo sees; else os.Getenv.
func Startup() func(string) string { return startup() }

var startup = sync.OnceValue(func() func(string) string {
	data, err := os.ReadFile("/proc/self/environ")
	if runtime.GOOS != "linux" || err != nil {
		return os.Getenv
	}
	return func(key string) string { return Lookup(data, key) }
})

// Lookup returns the value of key in NUL-separated KEY=value entries, as in
// /proc/self/environ; the first entry wins, as in the runtime. "" when absent.
func Lookup(environ []byte, key string) string {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte{'='}); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}
