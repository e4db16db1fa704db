package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestDocuments(t *testing.T) {
	in := "# leading comment only\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n--- # trailing\n\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"
	docs := Documents([]byte(in))
	require.Len(t, docs, 2)
	assert.Contains(t, string(docs[0]), "name: a")
	assert.Contains(t, string(docs[1]), "name: b")
	// A "---" inside a block scalar is indented, so it is not a separator.
	assert.Len(t, Documents([]byte("a: |\n  ---\n  b\n")), 1)
}

func TestDecodeStrict(t *testing.T) {
	obj, err := Decode([]byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: i}]\n"))
	require.NoError(t, err)
	j, ok := obj.(*batchv1.Job)
	require.True(t, ok)
	assert.Equal(t, "j", j.Name)
	assert.Equal(t, corev1.RestartPolicyNever, j.Spec.Template.Spec.RestartPolicy)

	for name, doc := range map[string]string{
		"unknown top-level field": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspek: {}\n",
		"unknown nested field":    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, resource: {}}]\n",
		"misspelt env source":     "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, env: [{name: X, valueFrom: {resourceFieldReference: {resource: limits.cpu}}}]}]\n",
		"wrong type":              "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {backoffLimit: none}\n",
		"duplicate key":           "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\n",
		"bad quantity":            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, resources: {limits: {cpu: lots}}}]\n",
		"unregistered kind":       "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
		"no kind":                 "metadata: {name: s}\n",
	} {
		_, err := Decode([]byte(doc))
		assert.Error(t, err, name)
	}
	_, err = DecodeAll([]byte("# nothing\n"))
	assert.Error(t, err)
}

func TestKindClusterStrict(t *testing.T) {
	c, err := KindCluster([]byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n"))
	require.NoError(t, err)
	require.Len(t, c.Nodes, 1)
	_, err = KindCluster([]byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n  imagee: x\n"))
	assert.Error(t, err, "unknown field")
	_, err = KindCluster([]byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha3\n"))
	assert.Error(t, err, "old apiVersion")
}
