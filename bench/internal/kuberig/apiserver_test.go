package kuberig

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/fitgo/fitgo/bench/internal/manifests"
)

// examplesRoot is the repository's examples/, relative to this package.
const examplesRoot = "../../../examples"

// TestAPIServer checks the rig against the real API server, then every
// Kubernetes manifest under examples/ with a server-side dry run. The
// runner's own manifests are checked in package cluster
// (TestAPIServerRunnerManifests).
func TestAPIServer(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	t.Logf("kube-apiserver %s at %s", s.Version, s.URL)
	require.NoError(t, s.Namespace(ctx, "examples"))

	// The server refuses what a cluster refuses, so a pass below means
	// something: a request above its limit, a misspelt field, a Job without
	// containers.
	t.Run("rejects", func(t *testing.T) {
		for name, doc := range map[string]string{
			"request above limit": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}}]}}`,
			"unknown field":       `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x","resourcez":{}}]}}`,
			"no containers":       `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[]}}}}`,
			"no namespace":        `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"missing"},"spec":{"containers":[{"name":"c","image":"x"}]}}`,
		} {
			err := s.DryRun(ctx, "examples", []byte(doc))
			var se *StatusError
			if assert.True(t, errors.As(err, &se), "%s: %v", name, err) {
				assert.Contains(t, []int{400, 404, 422}, se.Code, "%s: %v", name, err)
			}
		}
		ok := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`
		require.NoError(t, s.DryRun(ctx, "examples", []byte(ok)), "a minimal Pod")
		err := s.DryRun(ctx, "examples", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`))
		require.NoError(t, err, "a dry run stores nothing: the same name again")
	})

	t.Run("examples", func(t *testing.T) {
		n := 0
		err := filepath.WalkDir(examplesRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), "apiVersion: kind.x-k8s.io/") {
				// kind's cluster configuration: no API object (manifests
				// decodes it into kind's types).
				return nil
			}
			for i, doc := range manifests.Documents(data) {
				out, err := s.DryRunObject(ctx, "examples", doc)
				assert.NoError(t, err, "%s, document %d", path, i+1)
				n++
				if filepath.Base(path) == "pod-level.yaml" && err == nil {
					// A server with PodLevelResources off accepts the
					// manifest and drops the pod's resources.
					var d appsv1.Deployment
					require.NoError(t, json.Unmarshal(out, &d))
					if assert.NotNil(t, d.Spec.Template.Spec.Resources, "%s: the server (%s) kept the pod-level resources", path, s.Version) {
						assert.NotEmpty(t, d.Spec.Template.Spec.Resources.Limits, path)
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, 3, "the Deployments of examples/kubernetes")
	})
}
