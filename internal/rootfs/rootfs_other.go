//go:build !linux

package rootfs

import (
	"io/fs"
	"os"
)

var root fs.FS = os.DirFS("/")
