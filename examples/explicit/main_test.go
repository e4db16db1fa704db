package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

func TestSummaryPrintsPoliciesAsWords(t *testing.T) {
	b, err := json.Marshal(summary(
		maxprocs.Result{Policy: maxprocs.Policy{Rounding: maxprocs.Ceil, Reserve: 0.25, Max: 8}},
		memlimit.Result{Policy: memlimit.Policy{Ratio: 0.85, Margin: 64 << 20}}))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"policy":"ceil`)
	assert.Contains(t, string(b), `"policy":"ratio 0.85`)
	assert.NotContains(t, string(b), `"Rounding"`)
}
