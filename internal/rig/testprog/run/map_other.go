//go:build !unix

package run

import "errors"

func mapFile(string) error { return errors.New("map: not on this system") }
