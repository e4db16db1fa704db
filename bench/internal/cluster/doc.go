// Package cluster runs the benchmark's variants as Kubernetes Jobs (and, for the
// resize scenario, Pods resized in place): in a kind cluster it creates and
// deletes, or in an existing cluster named by a kubeconfig context. It drives
// docker or podman, kind and kubectl through an Executor, so that its tests
// can play the cluster (fake_test.go); the manifests are built from the
// k8s.io/api types, and a real API server checks them
// (TestAPIServerRunnerManifests, with bench/internal/kuberig).
package cluster
