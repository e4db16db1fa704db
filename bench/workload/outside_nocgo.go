//go:build !cgo

package workload

import "errors"

func cmalloc(int) (func(), error) {
	return nil, errors.New("cgo: the binary is built without cgo (CGO_ENABLED=0)")
}
