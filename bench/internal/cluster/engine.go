package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// engineInfo is what the preflight learnt of the container engine.
type engineInfo struct {
	tool            string // docker or podman: builds, saves and pushes the image
	cgroupVersion   string // "1" or "2"; "" unknown
	containerdStore bool   // Docker with the containerd image store
}

// dockerInfo is the part of "docker info" or "podman info" (as JSON) the
// runner reads; podman-docker answers "docker info" with Podman's fields.
type dockerInfo struct {
	CgroupVersion string      `json:"CgroupVersion"`
	CgroupDriver  string      `json:"CgroupDriver"`
	DriverStatus  [][2]string `json:"DriverStatus"`
	Host          *struct {
		CgroupVersion string `json:"cgroupVersion"`
		CgroupManager string `json:"cgroupManager"`
	} `json:"host"`
}

// preflight checks the tools before anything is created.
func (r *Runner) preflight(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Kind() || cfg.Build {
		if err := r.inspectEngine(ctx); err != nil {
			return err
		}
	}
	if cfg.Kind() {
		out, err := r.Exec.Run(ctx, r.kindCmd("version"))
		if err != nil {
			return fmt.Errorf("kind is needed (https://kind.sigs.k8s.io/docs/user/quick-start/#installation): %w", err)
		}
		r.info.kindVersion = strings.TrimSpace(string(out))
	}
	out, err := r.run(ctx, "kubectl", "version", "--client", "-o", "json")
	if err != nil {
		return fmt.Errorf("kubectl is needed (https://kubernetes.io/docs/tasks/tools/): %w", err)
	}
	var v struct {
		ClientVersion *version.Info `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err == nil && v.ClientVersion != nil && cfg.Resize() {
		minor, _ := strconv.Atoi(strings.TrimRight(v.ClientVersion.Minor, "+"))
		if v.ClientVersion.Major == "1" && minor < 32 {
			return fmt.Errorf("-scenario resize needs kubectl 1.32 or later (patch --subresource resize); this one is %s", v.ClientVersion.GitVersion)
		}
	}
	return nil
}

// inspectEngine asks the provider's engine for its cgroup version and image
// store. The JSON template works for Docker (any version), Podman and
// podman-docker; Docker's own {{.CgroupVersion}} fails under Podman.
func (r *Runner) inspectEngine(ctx context.Context) error {
	tool := r.cfg.Provider
	name := map[string]string{ProviderDocker: "Docker", ProviderPodman: "Podman"}[tool]
	out, err := r.run(ctx, tool, "info", "--format", "{{json .}}")
	if err != nil {
		return fmt.Errorf("%s is needed, with a running engine (or -provider podman for Podman): %w", name, err)
	}
	var di dockerInfo
	if err := json.Unmarshal(out, &di); err != nil {
		return fmt.Errorf("%s info: %w", tool, err)
	}
	r.engine.tool = tool
	switch {
	case di.Host != nil && di.Host.CgroupVersion != "":
		if tool == ProviderDocker {
			// podman-docker: kind must be told, or it treats Podman as Docker.
			r.logf("docker is Podman here (podman-docker): using the podman provider")
			r.cfg.Provider = ProviderPodman
			r.engine.tool = ProviderPodman
		}
		r.engine.cgroupVersion = strings.TrimPrefix(di.Host.CgroupVersion, "v")
		r.info.cgroup = "v" + r.engine.cgroupVersion + " (" + di.Host.CgroupManager + " manager, Podman host)"
	case di.CgroupVersion != "":
		r.engine.cgroupVersion = di.CgroupVersion
		r.info.cgroup = "v" + di.CgroupVersion + " (" + di.CgroupDriver + " driver, Docker host)"
		for _, kv := range di.DriverStatus {
			if kv[0] == "driver-type" && kv[1] == "io.containerd.snapshotter.v1" {
				r.engine.containerdStore = true
			}
		}
	}
	return nil
}

// provideImage builds the image and gets it to the cluster: kind load for a
// kind cluster, a push for an existing one (-push), or nothing (the cluster
// pulls it).
func (r *Runner) provideImage(ctx context.Context) error {
	cfg := r.cfg
	tool := r.engine.tool
	r.image = cfg.Image
	if cfg.Kind() && tool == ProviderPodman && localImage(cfg.Image) {
		// Podman names a local build localhost/<name>, and so does the
		// archive it saves: the node knows it by that name.
		r.image = "localhost/" + cfg.Image
	}
	if cfg.Build {
		r.logf("building %s from %s", cfg.Image, path.Join(cfg.RepoRoot, "bench", "Dockerfile"))
		if _, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"build", "-f", path.Join("bench", "Dockerfile"), "-t", cfg.Image, "."}, Dir: cfg.RepoRoot, Stream: true}); err != nil {
			return err
		}
	}
	if !cfg.Kind() {
		if cfg.Push {
			r.logf("pushing %s", cfg.Image)
			if _, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"push", cfg.Image}, Stream: true}); err != nil {
				return err
			}
		}
		return nil
	}
	r.logf("loading %s into the cluster", r.image)
	if tool == ProviderDocker && !r.engine.containerdStore && cfg.Provider == ProviderDocker {
		c := r.kindCmd("load", "docker-image", cfg.Image, "--name", cfg.Cluster)
		c.Stream = true
		_, err := r.Exec.Run(ctx, c)
		return err
	}
	// Podman, or Docker's containerd image store, where kind load
	// docker-image fails ("content digest not found", kind#3795): save the
	// node's platform only, and load the archive.
	archive := filepath.Join(r.tmp, "image.tar")
	save := []string{"save", "-o", archive, r.image}
	if tool == ProviderDocker {
		save = []string{"save", "--platform", "linux/" + r.info.arch, "-o", archive, cfg.Image}
	}
	_, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: save})
	if err != nil && tool == ProviderDocker && strings.Contains(err.Error(), "unknown flag: --platform") {
		// Docker before 28 saves one platform anyway.
		_, err = r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"save", "-o", archive, cfg.Image}})
	}
	if err != nil {
		return err
	}
	c := r.kindCmd("load", "image-archive", archive, "--name", cfg.Cluster)
	c.Stream = true
	_, err = r.Exec.Run(ctx, c)
	return err
}
