package cluster

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/variant"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := ParseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu"}, c.Scenarios)
	assert.Equal(t, DefaultDuration, c.Duration)
	assert.Equal(t, 3, c.Runs)
	assert.Equal(t, variant.All, c.Variants)
	assert.Equal(t, "fitgo-bench", c.Cluster)
	assert.Equal(t, "kind-fitgo-bench", c.Context())
	assert.Equal(t, "fitgo-bench:dev", c.Image)
	assert.True(t, c.Build)
	assert.False(t, c.Keep)
	assert.Equal(t, 2*DefaultDuration+3*time.Minute, c.Timeout)
	assert.Regexp(t, `^fitgo-bench-\d{8}-\d{6}$`, c.Namespace())
	assert.Empty(t, c.Out, "as the local runner: files only with -out")
	// Run from bench/ (go run -C bench), the defaults find the repository.
	assert.FileExists(t, c.KindConfig)
	assert.FileExists(t, c.RepoRoot+"/bench/Dockerfile")

	assert.Equal(t, []Setting{
		{Scenario: "cpu", CPUs: 0.5, HeapMiB: 100},
		{Scenario: "cpu", CPUs: 1, HeapMiB: 100},
		{Scenario: "cpu", CPUs: 1.5, HeapMiB: 100},
	}, c.Settings())
}

func TestParseFlagsScenarios(t *testing.T) {
	c, err := ParseFlags([]string{"-scenario=all", "-cpus=500m,2", "-memory=300Mi"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []Setting{
		{Scenario: "cpu", CPUs: 0.5, Memory: 300 << 20, HeapMiB: 100},
		{Scenario: "cpu", CPUs: 2, Memory: 300 << 20, HeapMiB: 100},
		{Scenario: "memory", CPUs: 0.5, Memory: 300 << 20, HeapMiB: 180},
		{Scenario: "memory", CPUs: 2, Memory: 300 << 20, HeapMiB: 180},
	}, c.Settings())

	c, err = ParseFlags([]string{"-scenario=memory"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []Setting{{Scenario: "memory", Memory: 256 << 20, HeapMiB: 154}}, c.Settings(), "as the local runner: no CPU limit, heap 60 % of 256Mi")

	c, err = ParseFlags([]string{"-scenario=resize"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, c.Resize())
	assert.Equal(t, []Setting{{Scenario: "resize", CPUs: 1, Memory: 256 << 20, HeapMiB: 100}}, c.Settings())
	assert.Equal(t, 30*time.Second, c.Duration)
	assert.Equal(t, 10*time.Second, c.ResizeAfter)
	assert.InDelta(t, 3, c.ResizeCPUs, 0)
	assert.Equal(t, int64(512<<20), c.ResizeMemory)
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-scenario=nested"},
		{"-scenario=bogus"},
		{"-scenario=cpu,resize"},
		{"-scenario=resize", "-cpus=1,2"},
		{"-scenario=resize", "-resize-cpus=0"},
		{"-scenario=resize", "-report-every=20s"},
		{"-cpus=0.0005"},
		{"-cpus=1.2345"},
		{"-cpus=x"},
		{"-memory=10Mi"},
		{"-memory=lots"},
		{"-runs=0"},
		{"-duration=1ms"},
		{"-variants=fitgo,nope"},
		{"-run-id=Has_Upper"},
		{"-poll=0s"},
		{"extra"},
	} {
		_, err := ParseFlags(args, &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
	_, err := ParseFlags([]string{"-scenario=cpu,nested"}, &bytes.Buffer{})
	require.ErrorIs(t, err, errNested, "nested is the local runner's, with the reason")
	_, err = ParseFlags([]string{"-scenario=cpu,bogus"}, &bytes.Buffer{})
	require.EqualError(t, err, `unknown scenario "bogus" (cpu, memory, shared, all, or resize)`)
	_, err = ParseFlags([]string{"-scenario=memory", "-variants=fitgo,fitgo-oomprofile"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "fitgo-oomprofile runs only locally", "the local runner makes its capture directory")
	_, err = ParseFlags([]string{"-scenario=leak"}, &bytes.Buffer{})
	require.ErrorIs(t, err, errLeak, "leak is the local runner's, with the reason")
	for _, args := range [][]string{
		{"-scenario=shared", "-layout=sibling"},
		{"-scenario=shared", "-layout=bogus"},
		{"-scenario=shared", "-layout=,"},
		{"-scenario=shared", "-sidecar=512Mi"},
		{"-scenario=shared", "-sidecar=200Mi,100Mi"},
		{"-scenario=shared", "-memory=256Mi,128Mi", "-sidecar=128Mi"},
		{"-scenario=cpu", "-variants=oracle-headroom"},
		{"-scenario=cpu,shared", "-variants=fitgo,oracle-headroom"},
	} {
		_, err := ParseFlags(args, &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
}

func TestParseFlagsShared(t *testing.T) {
	c, err := ParseFlags([]string{"-scenario=shared"}, &bytes.Buffer{})
	require.NoError(t, err)
	// As the local runner: 512Mi, a 200Mi sidecar, no CPU limit, the live
	// heap 0.6 × (512 − 200) MiB; both of the cluster's layouts.
	assert.Equal(t, []Setting{
		{Scenario: "shared", Memory: 512 << 20, HeapMiB: 187, Layout: LayoutCoprocess, Sidecar: 200 << 20},
		{Scenario: "shared", Memory: 512 << 20, HeapMiB: 187, Layout: LayoutPodLevel, Sidecar: 200 << 20},
	}, c.Settings())
	assert.Equal(t, variant.Shared, c.Variants, "the shared scenario's variants, with the oracle")

	c, err = ParseFlags([]string{"-scenario=shared", "-memory=1Gi", "-sidecar=300Mi", "-layout=pod-level", "-variants=fitgo,oracle-headroom"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []Setting{{Scenario: "shared", Memory: 1 << 30, HeapMiB: 434, Layout: LayoutPodLevel, Sidecar: 300 << 20}}, c.Settings())
	require.Len(t, c.Variants, 2)
	assert.Equal(t, "oracle-headroom", c.Variants[1].Name)

	// With another scenario, the variants are the usual ones.
	c, err = ParseFlags([]string{"-scenario=cpu,shared", "-cpus=1"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, variant.All, c.Variants)
	assert.Equal(t, []Setting{
		{Scenario: "cpu", CPUs: 1, HeapMiB: 100},
		{Scenario: "shared", Memory: 512 << 20, HeapMiB: 187, Layout: LayoutCoprocess, Sidecar: 200 << 20},
		{Scenario: "shared", Memory: 512 << 20, HeapMiB: 187, Layout: LayoutPodLevel, Sidecar: 200 << 20},
	}, c.Settings(), "-cpus is the cpu scenario's; shared has no CPU limit")
}

// TestREADMECommandsParse: every kind command in the benchmark's document
// (docs/benchmark.md) parses, so that a renamed flag or scenario cannot leave
// it stale.
func TestREADMECommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../../docs/benchmark.md")
	require.NoError(t, err)
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^go run -C bench \. kind((?: [^#\n\\]+)?)`).FindAllStringSubmatch(string(b), -1) {
		args := strings.Fields(m[1])
		_, err := ParseFlags(args, &bytes.Buffer{})
		assert.NoError(t, err, "docs/benchmark.md: go run -C bench . kind%s", m[1])
		n++
	}
	assert.GreaterOrEqual(t, n, 4, "the kind commands of docs/benchmark.md, the shared scenario's among them")
	assert.Contains(t, string(b), "go run -C bench . kind -scenario shared")
}
