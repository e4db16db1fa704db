package envvar

import "strings"

// GODEBUG returns the start-up value of the integer runtime setting key as
// the runtime's parsegodebug computes it: def, then each list in order (the
// binary's DefaultGODEBUG, then the GODEBUG variable), a later key=value
// field overriding an earlier one; fields without '=' or with a value that is
// not an int32 are skipped. from is the index of the list that decided, -1
// for def.
func GODEBUG(key string, def int32, lists ...string) (v int32, from int) {
	v, from = def, -1
	for i, list := range lists {
		for _, field := range strings.Split(list, ",") {
			if k, value, ok := strings.Cut(field, "="); ok && k == key {
				if n, ok := runtimeAtoi(value, 32); ok {
					v, from = int32(n), i
				}
			}
		}
	}
	return v, from
}
