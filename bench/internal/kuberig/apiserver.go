// Package kuberig is the real Kubernetes rig of the tests: an API server on
// the host (Start) and a node with a real kubelet in a qemu guest
// (StartNode, node.go, docs/kubelet-rig.md).
//
// Start runs a real Kubernetes API server for tests: etcd and
// kube-apiserver on 127.0.0.1, on free ports, in a temporary directory, with
// no controller manager, scheduler or kubelet. Objects sent to it are
// validated, defaulted and admitted exactly as in a cluster of the same
// version; server-side dry-run (DryRun) does all of that without storing
// them.
//
// The binaries come from setup.sh, which builds them from the k8s.io/kubernetes
// and go.etcd.io/etcd/server/v3 modules into a cache outside the repository:
//
//	bash bench/internal/kuberig/setup.sh
//	FITGO_KUBETEST=require go test -C bench -run TestAPIServer ./...
//
// Without the binaries the tests skip and say so; with FITGO_KUBETEST=require
// a missing piece fails them instead (CI sets it). FITGO_KUBETEST=skip, or
// -short without FITGO_KUBETEST=require, skips them.
package kuberig

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Install is the command that builds the binaries.
const Install = "bash bench/internal/kuberig/setup.sh"

// CacheDir is where setup.sh puts the binaries: $FITGO_KUBETEST_CACHE, or
// ${XDG_CACHE_HOME:-$HOME/.cache}/fitgo/kubetest.
func CacheDir() string {
	if d := os.Getenv("FITGO_KUBETEST_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "fitgo", "kubetest")
}

// Server is a running API server with an administrator's token.
type Server struct {
	URL     string // https://127.0.0.1:<port>
	Version string // e.g. v1.37.2
	token   string
	client  *http.Client
	dir     string // the server's files: tokens, keys, etcd's data
}

// missing skips or fails the test for a missing piece of the rig.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("FITGO_KUBETEST") == "require" {
		t.Fatalf("%s (FITGO_KUBETEST=require); install: %s", msg, Install)
	}
	t.Skipf("%s; install: %s, then FITGO_KUBETEST=require go test -C bench -run TestAPIServer ./...", msg, Install)
}

// Binaries returns the paths of kube-apiserver and etcd, or skips (fails
// with FITGO_KUBETEST=require) when they are not installed.
func Binaries(t testing.TB) (apiserver, etcd string) {
	t.Helper()
	switch {
	case os.Getenv("FITGO_KUBETEST") == "skip":
		t.Skip("FITGO_KUBETEST=skip")
	case testing.Short() && os.Getenv("FITGO_KUBETEST") != "require":
		t.Skip("-short: no API server (FITGO_KUBETEST=require runs it)")
	}
	dir := CacheDir()
	if dir == "" {
		missing(t, "no cache directory (set FITGO_KUBETEST_CACHE)")
	}
	apiserver = filepath.Join(dir, "bin", "kube-apiserver")
	etcd = filepath.Join(dir, "bin", "etcd")
	for _, p := range []string{apiserver, etcd} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missing(t, "%s is not installed", p)
		}
	}
	return apiserver, etcd
}

// freePorts returns n free TCP ports on 127.0.0.1.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// logFile is a process's output, shown when the test fails.
type logFile struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	exited chan struct{} // closed when the process ends
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logFile) tail(n int) string { return l.tailFrom("", n) }

// tailFrom returns the last n lines that begin with prefix; with prefix "",
// the last n lines.
func (l *logFile) tailFrom(prefix string, n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(l.buf.String(), "\n"), "\n") {
		if strings.HasPrefix(line, prefix) {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// start runs a process until the test ends, and reports its output if the
// test fails.
func start(t testing.TB, name string, args ...string) *logFile {
	t.Helper()
	out := &logFile{exited: make(chan struct{})}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := out.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s output (last lines):\n%s", filepath.Base(name), out.tail(40))
		}
	})
	return out
}

// waitFor polls ok until it returns nil or the deadline passes.
func waitFor(t testing.TB, what string, timeout time.Duration, out *logFile, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := ok()
		if err == nil {
			return
		}
		select {
		case <-out.exited:
			t.Fatalf("%s exited: %v\n%s", what, err, out.tail(30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v: %v\n%s", what, timeout, err, out.tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Start starts etcd and kube-apiserver for the test and stops them when it
// ends. It skips (or fails, with FITGO_KUBETEST=require) when the binaries
// are missing.
func Start(t testing.TB) *Server {
	t.Helper()
	apiserver, etcd := Binaries(t)
	return startServer(t, apiserver, etcd, nil)
}

// startServer starts etcd and kube-apiserver with more lines in the token
// file (token,user,uid,"group,...") and more kube-apiserver flags.
func startServer(t testing.TB, apiserver, etcd string, tokenLines []string, args ...string) *Server {
	t.Helper()
	dir := t.TempDir() // removed after the processes stop (cleanups run last first)
	ports := freePorts(t, 3)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcdLog := start(t, etcd,
		"--name=kubetest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL, "--log-level=warn", "--unsafe-no-fsync")
	plain := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, "etcd", 30*time.Second, etcdLog, func() error {
		resp, err := plain.Get(etcdURL + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})

	token := randomHex(t)
	tokens := filepath.Join(dir, "tokens.csv")
	writeFile(t, tokens, []byte(strings.Join(append([]string{token + `,kubetest-admin,kubetest-admin,"system:masters"`}, tokenLines...), "\n")+"\n"))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	saKey, saPub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	writeFile(t, saKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}))
	writeFile(t, saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))

	apiLog := start(t, apiserver, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// No kubernetes Service endpoints: they may not be on loopback, and
		// nothing here needs them.
		"--endpoint-reconciler-type=none",
		"--v=0"}, args...)...)
	s := &Server{
		URL:   fmt.Sprintf("https://127.0.0.1:%d", ports[2]),
		token: token,
		dir:   dir,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			// A self-signed certificate for a loopback server of the test's own.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}},
	}
	waitFor(t, "kube-apiserver", 3*time.Minute, apiLog, func() error {
		_, err := s.do(context.Background(), http.MethodGet, "/readyz", "", nil)
		return err
	})
	b, err := s.do(context.Background(), http.MethodGet, "/version", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	s.Version = v.GitVersion
	return s
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// StatusError is the API server's refusal of a request.
type StatusError struct {
	Code    int
	Reason  string
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

func (s *Server) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		json.Unmarshal(b, &st)
		if st.Message == "" {
			st.Message = strings.TrimSpace(string(b))
		}
		return b, &StatusError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	}
	return b, nil
}

// typeMeta is what a manifest says it is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// resources maps "apiVersion kind" to the collection's path and whether it
// is namespaced.
var resources = map[string]struct {
	path       string
	namespaced bool
}{
	"v1 Namespace":                  {"/api/v1/namespaces", false},
	"v1 ServiceAccount":             {"/api/v1/serviceaccounts", true},
	"v1 Pod":                        {"/api/v1/pods", true},
	"v1 ConfigMap":                  {"/api/v1/configmaps", true},
	"v1 Service":                    {"/api/v1/services", true},
	"batch/v1 Job":                  {"/apis/batch/v1/jobs", true},
	"batch/v1 CronJob":              {"/apis/batch/v1/cronjobs", true},
	"apps/v1 Deployment":            {"/apis/apps/v1/deployments", true},
	"apps/v1 StatefulSet":           {"/apis/apps/v1/statefulsets", true},
	"apps/v1 DaemonSet":             {"/apis/apps/v1/daemonsets", true},
	"policy/v1 PodDisruptionBudget": {"/apis/policy/v1/poddisruptionbudgets", true},
}

// collection returns the path to POST a manifest to, in namespace ns unless
// the manifest names its own.
func collection(doc []byte, ns string) (string, typeMeta, error) {
	var tm typeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", tm, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	r, ok := resources[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return "", tm, fmt.Errorf("kuberig knows no resource for apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	if !r.namespaced {
		return r.path, tm, nil
	}
	if tm.Metadata.Namespace != "" {
		ns = tm.Metadata.Namespace
	}
	dir, res := filepath.Split(r.path) // ".../v1/", "pods"
	return dir + "namespaces/" + url.PathEscape(ns) + "/" + res, tm, nil
}

// create POSTs one manifest (YAML or JSON) with the given query and
// returns the server's answer: the object as it would store it.
func (s *Server) create(ctx context.Context, ns string, doc []byte, query string) ([]byte, error) {
	path, _, err := collection(doc, ns)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return s.do(ctx, http.MethodPost, path+"?"+query, "application/json", js)
}

// strict rejects unknown and duplicate fields, as kubectl's default
// --validate=strict does.
const strict = "fieldValidation=Strict"

// DryRun sends one manifest to the server with dryRun=All (kubectl create
// --dry-run=server --validate=strict): the server decodes, defaults,
// validates and admits it, and stores nothing. ns is the namespace for a
// manifest that names none.
func (s *Server) DryRun(ctx context.Context, ns string, doc []byte) error {
	_, err := s.DryRunObject(ctx, ns, doc)
	return err
}

// DryRunObject is DryRun, and returns the object as the server would have
// stored it (kubectl create --dry-run=server -o json): defaulted, and
// without the fields of the features the server has off.
func (s *Server) DryRunObject(ctx context.Context, ns string, doc []byte) ([]byte, error) {
	return s.create(ctx, ns, doc, "dryRun=All&"+strict)
}

// Create stores one manifest (kubectl create --validate=strict).
func (s *Server) Create(ctx context.Context, ns string, doc []byte) error {
	_, err := s.create(ctx, ns, doc, strict)
	return err
}

// Namespace creates the namespace and its default ServiceAccount (which the
// controller manager would create: the ServiceAccount admission plugin
// refuses pods without it).
func (s *Server) Namespace(ctx context.Context, name string) error {
	if err := s.Create(ctx, "", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+name+`"}}`)); err != nil {
		return err
	}
	return s.Create(ctx, name, []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`))
}

// PatchPod patches a pod, or its subresource (e.g. "resize"), with a
// strategic-merge patch; dryRun leaves the pod as it is.
func (s *Server) PatchPod(ctx context.Context, ns, name, subresource string, patch []byte, dryRun bool) error {
	path := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name)
	if subresource != "" {
		path += "/" + subresource
	}
	q := strict
	if dryRun {
		q = "dryRun=All&" + q
	}
	_, err := s.do(ctx, http.MethodPatch, path+"?"+q, "application/strategic-merge-patch+json", patch)
	return err
}

// DeletePod deletes a pod at once.
func (s *Server) DeletePod(ctx context.Context, ns, name string) error {
	_, err := s.do(ctx, http.MethodDelete, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name)+"?gracePeriodSeconds=0", "", nil)
	return err
}
