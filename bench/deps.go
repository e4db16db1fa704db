//go:build tools

// Package bench pins the harness's dependencies until the code that uses them lands.
package bench

import (
	_ "github.com/KimMachineGun/automemlimit/memlimit"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/automaxprocs/maxprocs"
	_ "gonum.org/v1/plot"
	_ "k8s.io/api/core/v1"
	_ "sigs.k8s.io/yaml"
)
