package envvar

import (
	"bytes"
	"os"
	"runtime"
	"sync"
)

// Startup returns the environment as the process started with it, which is
// what the runtime read: on Linux from /proc/self/environ, so that an init
// that ran before fitgo's and called os.Setenv or os.Unsetenv does not
// change what fitgo sees. Elsewhere, or when that file cannot be read, it is
// os.Getenv.
// It reads the file once per process.
func Startup() func(string) string { return startup() }

var startup = sync.OnceValue(func() func(string) string {
	if runtime.GOOS != "linux" {
		return os.Getenv
	}
	data, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return os.Getenv
	}
	return func(key string) string { return Lookup(data, key) }
})

// Lookup returns the value of key in environ, NUL-separated KEY=value
// entries as in /proc/self/environ; the first entry wins, as in the runtime
// and os.Getenv. It is "" when key is absent.
func Lookup(environ []byte, key string) string {
	for len(environ) > 0 {
		var kv []byte
		kv, environ, _ = bytes.Cut(environ, []byte{0})
		if k, v, ok := bytes.Cut(kv, []byte{'='}); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}
