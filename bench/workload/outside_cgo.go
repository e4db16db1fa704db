//go:build cgo

package workload

/*
#include <stdlib.h>
#include <string.h>

static void *hold(size_t n) {
	void *p = malloc(n);
	if (p) memset(p, 1, n);
	return p;
}
*/
import "C"

import "errors"

// cmalloc holds n bytes from C's malloc, every byte written.
func cmalloc(n int) (release func(), err error) {
	p := C.hold(C.size_t(n))
	if p == nil {
		return nil, errors.New("malloc failed")
	}
	return func() { C.free(p) }, nil
}
