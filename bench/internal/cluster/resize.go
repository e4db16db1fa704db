package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/podspec"
	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

// Files the resize scenario writes in -out.
const (
	ResizeJSON = "resize.json"
	ResizeMD   = "resize.md"
)

// Sample is one periodic report of the workload during a resize run.
type Sample struct {
	ElapsedS   float64 `json:"elapsed_s"` // since the process started
	GOMAXPROCS int     `json:"gomaxprocs"`
	GOMEMLIMIT int64   `json:"gomemlimit"` // math.MaxInt64: none
}

// ResizeResult is what one variant did when its pod was resized in place.
type ResizeResult struct {
	Variant      string  `json:"variant"`
	CPUsBefore   float64 `json:"cpus_before"`
	CPUsAfter    float64 `json:"cpus_after"`
	MemoryBefore int64   `json:"memory_before"`
	MemoryAfter  int64   `json:"memory_after"`
	// ResizeAtS is when the runner patched the pod, AppliedAtS when the
	// kubelet reported the new limits in force (0: never), both in seconds
	// since the container started (from the node's clock, to about a second).
	ResizeAtS  float64 `json:"resize_at_s"`
	AppliedAtS float64 `json:"applied_at_s,omitempty"`
	// Status is "applied", or why the resize did not happen.
	Status string `json:"status"`

	GOMAXPROCSBefore int   `json:"gomaxprocs_before"`
	GOMAXPROCSAfter  int   `json:"gomaxprocs_after"`
	GOMEMLIMITBefore int64 `json:"gomemlimit_before"`
	GOMEMLIMITAfter  int64 `json:"gomemlimit_after"`
	// CPUFollowedS and MemoryFollowedS are how long after the patch the
	// workload first reported a different GOMAXPROCS or GOMEMLIMIT; nil: it
	// never did.
	CPUFollowedS    *float64 `json:"cpu_followed_s"`
	MemoryFollowedS *float64 `json:"memory_followed_s"`

	Samples []Sample `json:"samples"`
	Err     string   `json:"error,omitempty"`
}

// FollowsCPU and FollowsMemory report whether the variant changed the knob
// after the resize.
func (r ResizeResult) FollowsCPU() bool    { return r.CPUFollowedS != nil }
func (r ResizeResult) FollowsMemory() bool { return r.MemoryFollowedS != nil }

// AnalyzeResize reads the workload's log of a resize run: the progress
// samples, the values before resizeAt (seconds since start) and at the end,
// and when each knob first changed after resizeAt.
func AnalyzeResize(logs []byte, resizeAt float64) (ResizeResult, error) {
	var out ResizeResult
	out.ResizeAtS = resizeAt
	var res *results.Workload
	for _, l := range bytes.Split(logs, []byte("\n")) {
		if i := bytes.IndexByte(l, '{'); i > 0 {
			l = l[i:]
		}
		line, err := results.ParseLine(l)
		if err != nil {
			continue
		}
		if line.Result != nil {
			res = line.Result
		}
		if p := line.Progress; p != nil {
			out.Samples = append(out.Samples, Sample{ElapsedS: p.ElapsedMS / 1000, GOMAXPROCS: p.GOMAXPROCS, GOMEMLIMIT: p.GOMEMLIMIT})
		}
	}
	if len(out.Samples) == 0 {
		return out, fmt.Errorf("no progress lines in the log (does the workload support -report-every?)")
	}
	// Before: the last sample taken at least half a second before the patch
	// (the start time is known to about a second).
	before := -1
	for i, s := range out.Samples {
		if s.ElapsedS <= resizeAt-0.5 {
			before = i
		}
	}
	if before < 0 {
		return out, fmt.Errorf("no sample before the resize at %.1fs: resize later (-resize-after) or report more often (-report-every)", resizeAt)
	}
	b := out.Samples[before]
	out.GOMAXPROCSBefore, out.GOMEMLIMITBefore = b.GOMAXPROCS, b.GOMEMLIMIT
	last := out.Samples[len(out.Samples)-1]
	out.GOMAXPROCSAfter, out.GOMEMLIMITAfter = last.GOMAXPROCS, last.GOMEMLIMIT
	if res != nil {
		out.GOMAXPROCSAfter, out.GOMEMLIMITAfter = res.GOMAXPROCS, res.GOMEMLIMIT
	}
	for _, s := range out.Samples[before+1:] {
		d := math.Max(s.ElapsedS-resizeAt, 0)
		if out.CPUFollowedS == nil && s.GOMAXPROCS != b.GOMAXPROCS {
			out.CPUFollowedS = &d
		}
		if out.MemoryFollowedS == nil && s.GOMEMLIMIT != b.GOMEMLIMIT {
			d := d
			out.MemoryFollowedS = &d
		}
	}
	if res == nil {
		return out, results.ErrNoResult
	}
	return out, nil
}

// resizeScenario runs each variant in a resizable Pod, resizes its limits in
// place after -resize-after and reports which variants follow. A variant
// whose run fails is a row with the error; the files are written after every
// variant.
func (r *Runner) resizeScenario(ctx context.Context, start time.Time) error {
	cfg := r.cfg
	st := cfg.Settings()[0]
	req := Workload{CPUs: st.CPUs, MemoryBytes: st.Memory, Resizable: true}.resources().Requests
	if why := r.fit(Cores(req[corev1.ResourceCPU]), req.Memory().Value()); why != "" {
		return fmt.Errorf("%s: %s", st, why)
	}
	if r.info.capCPU > 0 && cfg.ResizeCPUs > r.info.capCPU {
		msg := fmt.Sprintf("The node %s has %v CPUs, fewer than -resize-cpus %v: GOMAXPROCS cannot follow the limit above %v, and the runtime's own GOMAXPROCS (at least 2, at most the node's CPUs) may not change at all; -resize-cpus %v or less shows the difference.",
			r.info.node, r.info.capCPU, cfg.ResizeCPUs, r.info.capCPU, r.info.capCPU)
		r.logf("warning: %s", msg)
		r.notes = append(r.notes, msg)
	}
	var rows []ResizeResult
	for i, v := range cfg.Variants {
		label := fmt.Sprintf("resize %d/%d %s", i+1, len(cfg.Variants), v.Name)
		r.logf("%s: cpus %s → %s, memory %s → %s at %v", label, CPUQuantity(cfg.CPUs[0]), CPUQuantity(cfg.ResizeCPUs),
			MemoryQuantity(cfg.Memory[0]), MemoryQuantity(cfg.ResizeMemory), cfg.ResizeAfter)
		row, err := r.resizeRun(ctx, label, v)
		if err != nil && fatal(ctx, err) {
			why := fmt.Sprintf("not run: the scenario stopped after %d of %d variants: %v", i, len(cfg.Variants), err)
			for _, rest := range cfg.Variants[i:] {
				rows = append(rows, ResizeResult{Variant: rest.Name, Status: "not run", Err: why})
			}
			return errors.Join(err, r.writeResize(start, rows, true))
		}
		if err != nil {
			row.Err = err.Error()
			r.deletePod(ctx, resizePodName(v))
		}
		if row.Err != "" {
			r.failed++
			r.errs = append(r.errs, fmt.Errorf("%s: %s", label, row.Err))
			r.logf("  %s: FAILED: %s", label, row.Err)
		} else {
			r.logf("  %s: GOMAXPROCS %d → %d, GOMEMLIMIT %s → %s", label, row.GOMAXPROCSBefore, row.GOMAXPROCSAfter,
				limitString(row.GOMEMLIMITBefore), limitString(row.GOMEMLIMITAfter))
		}
		rows = append(rows, row)
		if i < len(cfg.Variants)-1 {
			if err := r.writeResizeFiles(start, rows); err != nil {
				return err
			}
		}
	}
	return r.writeResize(start, rows, false)
}

func resizePodName(v variant.Variant) string { return slug(v.Name) + "-resize" }

// deletePod deletes a pod whose run failed, so that it does not keep running
// beside the next variant's.
func (r *Runner) deletePod(ctx context.Context, name string) {
	if _, err := r.kubectl(ctx, true, "delete", "pod", name, "--ignore-not-found", "--wait=false"); err != nil {
		r.logf("  deleting the Pod %s: %v", name, err)
	}
}

func (r *Runner) getPod(ctx context.Context, name string) (podState, error) {
	out, err := r.read(ctx, true, "get", "pod", name, "-o", "json")
	if err != nil {
		return podState{}, err
	}
	return decodePod(out)
}

// lastProgress returns the elapsed time of the last progress line in the
// workload's log so far (0: none).
func (r *Runner) lastProgress(ctx context.Context, name string) float64 {
	logs, err := r.read(ctx, true, "logs", name, "-c", ContainerName)
	if err != nil {
		return 0
	}
	last := 0.0
	for _, l := range bytes.Split(logs, []byte("\n")) {
		if line, err := results.ParseLine(l); err == nil && line.Progress != nil {
			last = line.Progress.ElapsedMS / 1000
		}
	}
	return last
}

func (r *Runner) resizeRun(ctx context.Context, label string, v variant.Variant) (ResizeResult, error) {
	cfg := r.cfg
	row := ResizeResult{Variant: v.Name, CPUsBefore: cfg.CPUs[0], CPUsAfter: cfg.ResizeCPUs, MemoryBefore: cfg.Memory[0], MemoryAfter: cfg.ResizeMemory}
	name := resizePodName(v)
	st := cfg.Settings()[0]
	w := r.workload(name, v, st.CPUs, st.Memory, r.workloadArgs(st.HeapMiB, "-report-every="+cfg.ReportEvery.String()))
	w.Resizable = true
	manifest, err := PodManifest(w)
	if err != nil {
		return row, err
	}
	if _, err := r.Exec.Run(ctx, r.kubectlCmd(true, manifest, "create", "-f", "-")); err != nil {
		return row, err
	}
	r.createdObjs = true
	p, err := r.waitPod(ctx, label, cfg.Timeout, func() (podState, bool, error) {
		p, err := r.getPod(ctx, name)
		c := p.workload()
		return p, err == nil && (p.done() || c != nil && c.State.Running != nil), err
	})
	if err != nil {
		return row, err
	}
	c := p.workload()
	if p.done() || c == nil || c.State.Running == nil {
		row.Err = "the pod finished before the resize: " + p.describe()
		return row, nil
	}
	// Time the resize on this machine's clock from when the container was
	// first seen running: its startedAt is the node's clock, in whole
	// seconds, and a laptop's container VM drifts after a sleep.
	seen := r.now()
	if wait := cfg.ResizeAfter - r.now().Sub(seen); wait > 0 {
		if err := r.sleep(ctx, wait); err != nil {
			return row, err
		}
	}
	patch, err := ResizePatch(cfg.ResizeCPUs, cfg.ResizeMemory)
	if err != nil {
		return row, err
	}
	if _, err := r.kubectl(ctx, true, "patch", "pod", name, "--subresource", "resize", "--patch", string(patch)); err != nil {
		return row, fmt.Errorf("resize: %w", err)
	}
	// The container started before it was seen, so the time since is a lower
	// bound of the workload's own clock at the patch; so is its last report.
	resizeAt := math.Max(r.now().Sub(seen).Seconds(), r.lastProgress(ctx, name))
	r.logf("  %s: resized at %.1fs", label, resizeAt)

	// Until the pod ends: note when the kubelet applies the new limits, or why
	// it does not.
	row.Status = "not applied before the pod ended"
	p, err = r.waitPod(ctx, label, cfg.Timeout, func() (podState, bool, error) {
		p, err := r.getPod(ctx, name)
		if err != nil {
			return p, false, err
		}
		if row.AppliedAtS == 0 && p.limitsApplied(cfg.ResizeCPUs, cfg.ResizeMemory) {
			row.AppliedAtS = math.Max(r.now().Sub(seen).Seconds(), resizeAt)
			row.Status = "applied"
			r.logf("  %s: the kubelet applied the new limits at %.1fs", label, row.AppliedAtS)
		}
		if row.AppliedAtS == 0 {
			if s := p.resizeTrouble(); s != "" && s != row.Status {
				row.Status = s
				r.logf("  %s: resize %s", label, s)
			}
		}
		return p, p.done(), nil
	})
	if err != nil {
		return row, err
	}
	logs, err := r.read(ctx, true, "logs", name, "-c", ContainerName)
	if err != nil {
		return row, err
	}
	a, aerr := AnalyzeResize(logs, resizeAt)
	a.Variant, a.CPUsBefore, a.CPUsAfter, a.MemoryBefore, a.MemoryAfter = row.Variant, row.CPUsBefore, row.CPUsAfter, row.MemoryBefore, row.MemoryAfter
	a.AppliedAtS, a.Status = row.AppliedAtS, row.Status
	if run := RunFromPod(&p.Pod, logs); run.Err != "" || run.Killed() {
		a.Err = run.Err
		if run.Killed() {
			a.Err = "OOM-killed"
		}
	} else if aerr != nil {
		a.Err = aerr.Error()
	}
	return a, nil
}

// resizeTrouble returns why a resize is not applied yet, from the pod's
// conditions: PodResizePending (Deferred: waits for room on the node;
// Infeasible: never on this node) and PodResizeInProgress with reason Error
// (the kubelet or the runtime failed to apply it); "" when neither.
func (p podState) resizeTrouble() string {
	if c := p.condition(corev1.PodResizeInProgress); c != nil && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonError {
		return strings.TrimSpace("failed (Error): " + c.Message)
	}
	if c := p.condition(corev1.PodResizePending); c != nil && c.Status == corev1.ConditionTrue {
		what := "pending"
		if c.Reason == corev1.PodReasonInfeasible {
			what = "infeasible"
		}
		return strings.TrimSpace(what + " (" + c.Reason + "): " + c.Message)
	}
	return ""
}

// limitsApplied reports whether the kubelet reports the workload container
// running with the given limits.
func (p podState) limitsApplied(cpus float64, mem int64) bool {
	c := p.workload()
	if c == nil || c.Resources == nil {
		return false
	}
	cpu, mq := c.Resources.Limits[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceMemory]
	return cpu.Cmp(podspec.CPU(cpus)) == 0 && mq.Cmp(podspec.Memory(mem)) == 0
}

func limitString(v int64) string {
	if v == math.MaxInt64 || v <= 0 {
		return "off"
	}
	return strconv.FormatFloat(float64(v)/(1<<20), 'f', 1, 64) + " MiB"
}

func followed(d *float64) string {
	if d == nil {
		return "no"
	}
	return fmt.Sprintf("yes, %.0f s after", *d)
}

// WriteResizeTable writes the resize results as a text table.
func WriteResizeTable(w io.Writer, rows []ResizeResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tGOMAXPROCS\tfollows CPU\tGOMEMLIMIT\tfollows memory\tresize")
	for _, r := range rows {
		if r.Err != "" && len(r.Samples) == 0 {
			fmt.Fprintf(tw, "%s\t–\t–\t–\t–\t%s\n", r.Variant, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d → %d\t%s\t%s → %s\t%s\t%s\n", r.Variant, r.GOMAXPROCSBefore, r.GOMAXPROCSAfter, followed(r.CPUFollowedS),
			limitString(r.GOMEMLIMITBefore), limitString(r.GOMEMLIMITAfter), followed(r.MemoryFollowedS), r.Status)
	}
	return tw.Flush()
}

// writeResizeFiles writes resize.json and resize.md to -out (if set).
func (r *Runner) writeResizeFiles(start time.Time, rows []ResizeResult) error {
	cfg := r.cfg
	if cfg.Out == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, ResizeJSON), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, ResizeMD), r.resizeMarkdown(start, rows), 0o644)
}

// writeResize prints the table and writes the files at the end of the
// scenario; stopped: it ended early (the caller has the error).
func (r *Runner) writeResize(start time.Time, rows []ResizeResult, stopped bool) error {
	if err := WriteResizeTable(r.Stdout, rows); err != nil {
		return err
	}
	if err := r.writeResizeFiles(start, rows); err != nil {
		return err
	}
	if r.cfg.Out != "" {
		r.logf("wrote %s", r.cfg.Out)
	}
	if r.failed > 0 && !stopped {
		return fmt.Errorf("%d resize run(s) failed (the errors are above, and in %s with -out): %w", r.failed, ResizeJSON, errors.Join(r.errs...))
	}
	return nil
}

// resizeMarkdown is resize.md: the context and the table.
func (r *Runner) resizeMarkdown(start time.Time, rows []ResizeResult) []byte {
	cfg := r.cfg
	var md bytes.Buffer
	meta := r.meta(start, "")
	fmt.Fprintf(&md, "# fitgo in-place resize (kind runner)\n\n")
	if meta.Emulated != "" {
		fmt.Fprintf(&md, "%s\n\n", report.EmulatedHeader(meta.Emulated))
	}
	fmt.Fprintf(&md, "- **Command**: `%s`\n- **Cluster**: %s\n- **Kernel**: %s\n- **Cgroups**: %s\n", meta.Command, meta.Machine, meta.Kernel, meta.Cgroup)
	fmt.Fprintf(&md, "- **Resize**: CPU limit %s → %s, memory limit %s → %s, %v after the container started, through `kubectl patch pod --subresource resize`\n\n",
		CPUQuantity(cfg.CPUs[0]), CPUQuantity(cfg.ResizeCPUs), MemoryQuantity(cfg.Memory[0]), MemoryQuantity(cfg.ResizeMemory), cfg.ResizeAfter)
	md.WriteString("| variant | GOMAXPROCS | follows CPU | GOMEMLIMIT | follows memory | resize |\n|---|--:|---|--:|---|---|\n")
	for _, row := range rows {
		status := row.Status
		if row.Err != "" {
			status += "; error: " + row.Err
		}
		fmt.Fprintf(&md, "| %s | %d → %d | %s | %s → %s | %s | %s |\n", row.Variant, row.GOMAXPROCSBefore, row.GOMAXPROCSAfter, followed(row.CPUFollowedS),
			limitString(row.GOMEMLIMITBefore), limitString(row.GOMEMLIMITAfter), followed(row.MemoryFollowedS), strings.ReplaceAll(status, "|", "/"))
	}
	md.WriteString("\nValues before: the workload's last report before the patch; after: at the end of the run. " +
		"\"follows\" means the workload reported a different value after the resize, the delay counted from the patch. " +
		"Environment variables (the env variant) are fixed at start; the runtime follows only the CPU quota (at least 2); automaxprocs and automemlimit apply once at start.\n")
	for _, n := range r.notes {
		md.WriteString("\n" + n + "\n")
	}
	return md.Bytes()
}
