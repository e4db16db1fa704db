package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/bench/internal/local"
)

func TestMain(m *testing.M) {
	local.CgExec()
	m.Run()
}

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), nil, &out, &errb))
	assert.Contains(t, errb.String(), "Commands:")

	errb.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"nope"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown command "nope"`)

	assert.Equal(t, 0, run(t.Context(), []string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "local")

	errb.Reset()
	assert.Equal(t, 0, run(t.Context(), []string{"local", "-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: go run -C bench . local")

	errb.Reset()
	assert.Equal(t, 0, run(t.Context(), []string{"kind", "-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: go run -C bench . kind")

	errb.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"local", "-runs", "0"}, &out, &errb))
}
