// Package manifests decodes Kubernetes manifests and kind cluster
// configurations strictly into their real API types, for tests: an unknown or
// misspelt field, a wrong type or a duplicate key is an error, as it is for
// "kubectl apply --validate=strict" and "kind create cluster".
//
// It is imported only by tests, so the sigs.k8s.io/kind dependency stays out
// of the harness's binary (the kind runner builds its manifests from the
// k8s.io/api types; the library's go.mod has none of them). Strict decoding
// catches a misspelt field; bench/internal/kuberig has a real API server
// validate the same files. Its tests check examples/kubernetes, the kind
// cluster configuration and the README's manifests.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// types maps "apiVersion kind" to a constructor of the typed object.
var types = map[string]func() any{
	"v1 Pod":              func() any { return new(corev1.Pod) },
	"v1 Namespace":        func() any { return new(corev1.Namespace) },
	"v1 ConfigMap":        func() any { return new(corev1.ConfigMap) },
	"batch/v1 Job":        func() any { return new(batchv1.Job) },
	"apps/v1 Deployment":  func() any { return new(appsv1.Deployment) },
	"apps/v1 StatefulSet": func() any { return new(appsv1.StatefulSet) },
	"apps/v1 DaemonSet":   func() any { return new(appsv1.DaemonSet) },
	"batch/v1 CronJob":    func() any { return new(batchv1.CronJob) },
}

// Documents splits multi-document YAML at "---" separator lines and drops
// documents that hold only comments or whitespace.
func Documents(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if t := strings.TrimRight(line, " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- ") {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}

func hasContent(doc []byte) bool {
	for _, l := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// Decode decodes one manifest (YAML or JSON) strictly into the k8s.io/api type
// its apiVersion and kind name.
func Decode(doc []byte) (any, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, errors.New("missing apiVersion or kind")
	}
	newObj := types[tm.APIVersion+" "+tm.Kind]
	if newObj == nil {
		return nil, fmt.Errorf("no type registered for apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// DecodeAll decodes every document of a multi-document file.
func DecodeAll(data []byte) ([]any, error) {
	var objs []any
	for i, doc := range Documents(data) {
		obj, err := Decode(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return nil, errors.New("no documents")
	}
	return objs, nil
}

// KindCluster decodes a kind cluster configuration the way kind does: YAML
// with known fields only, into kind's v1alpha4 Cluster.
func KindCluster(data []byte) (*kindv1alpha4.Cluster, error) {
	var c kindv1alpha4.Cluster
	d := yamlv3.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	if err := d.Decode(&c); err != nil {
		return nil, err
	}
	if c.APIVersion != "kind.x-k8s.io/v1alpha4" || c.Kind != "Cluster" {
		return nil, fmt.Errorf("apiVersion %q kind %q: want kind.x-k8s.io/v1alpha4 Cluster", c.APIVersion, c.Kind)
	}
	return &c, nil
}
