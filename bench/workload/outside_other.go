//go:build !unix

package workload

import "errors"

func holdOutside(string, int) (func(), error) {
	return nil, errors.New("holding memory outside Go: not on this system")
}
