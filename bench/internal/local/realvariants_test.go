package local

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// testVariants are the variants of TestRealRun: untuned, and fitgo, which
// sets GOMEMLIMIT.
const testVariants = "untuned,fitgo"

func checkSecondMemory(t *testing.T, s results.Summary) {
	assert.Zero(t, s.OOMKills, "fitgo's GOMEMLIMIT keeps the heap under the limit")
	assert.Less(t, float64(s.GOMEMLIMITBytes), float64(256<<20))
	assert.Greater(t, float64(s.Requests), 1000.0)
}
