package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFollowing(t *testing.T) {
	for _, tc := range []struct {
		on, limited bool
		reason      string
		want        string
	}{
		{true, true, "fitted", "following the limit"},
		{true, false, "no memory limit", "no memory limit; watching for one"},
		{false, false, "FITGO=off", "not following: FITGO=off"},
	} {
		assert.Equal(t, tc.want, following(tc.on, tc.limited, tc.reason))
	}
}
