package envvar

import "strings"

// GODEBUG returns the start-up value of the integer runtime setting key (such
// as "containermaxprocs"), as the runtime's parsegodebug computes it: it
// starts from def, the runtime's built-in default, then applies each list in
// order (the binary's DefaultGODEBUG, then the GODEBUG environment variable).
// Each list is a comma-separated sequence of key=value fields read left to
// right, a later field overriding an earlier one; fields without '=' and
// values that are not integers in range for int32 are skipped.
//
// from is the index in lists of the list whose field decided the value, or -1
// when no list set it and def stands.
func GODEBUG(key string, def int32, lists ...string) (v int32, from int) {
	v, from = def, -1
	for i, list := range lists {
		for list != "" {
			var field string
			field, list, _ = strings.Cut(list, ",")
			k, value, ok := strings.Cut(field, "=")
			if !ok || k != key {
				continue
			}
			if n, ok := runtimeAtoi(value, 32); ok {
				v, from = int32(n), i
			}
		}
	}
	return v, from
}
