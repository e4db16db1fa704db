//go:build !linux

package rootfs

import "os"

var root = os.DirFS("/")
