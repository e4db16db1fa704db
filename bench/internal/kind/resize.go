package kind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/settings"
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
// place after -resize-after and reports which variants follow.
func (r *Runner) resizeScenario(ctx context.Context, start time.Time) error {
	cfg := r.cfg
	var rows []ResizeResult
	for i, v := range cfg.Variants {
		label := fmt.Sprintf("resize %d/%d %s", i+1, len(cfg.Variants), v.Name)
		r.logf("%s: cpus %s → %s, memory %s → %s at %v", label, CPUQuantity(cfg.CPUs[0]), CPUQuantity(cfg.ResizeCPUs),
			MemoryQuantity(cfg.Memory[0]), MemoryQuantity(cfg.ResizeMemory), cfg.ResizeAfter)
		row, err := r.resizeRun(ctx, label, v)
		if err != nil {
			return err
		}
		if row.Err != "" {
			r.failed++
			r.logf("  %s: FAILED: %s", label, row.Err)
		} else {
			r.logf("  %s: GOMAXPROCS %d → %d, GOMEMLIMIT %s → %s", label, row.GOMAXPROCSBefore, row.GOMAXPROCSAfter,
				limitString(row.GOMEMLIMITBefore), limitString(row.GOMEMLIMITAfter))
		}
		rows = append(rows, row)
	}
	return r.writeResize(start, rows)
}

func (r *Runner) getPod(ctx context.Context, name string) (podStatusObject, error) {
	out, err := r.kubectl(ctx, true, "get", "pod", name, "-o", "json")
	if err != nil {
		return podStatusObject{}, err
	}
	return decodePod(out)
}

func (r *Runner) resizeRun(ctx context.Context, label string, v variant.Variant) (ResizeResult, error) {
	cfg := r.cfg
	row := ResizeResult{Variant: v.Name, CPUsBefore: cfg.CPUs[0], CPUsAfter: cfg.ResizeCPUs, MemoryBefore: cfg.Memory[0], MemoryAfter: cfg.ResizeMemory}
	name := slug(v.Name) + "-resize"
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
	p, err := r.waitPod(ctx, label, cfg.Timeout, func() (podStatusObject, bool, error) {
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
	started := c.State.Running.StartedAt
	if wait := cfg.ResizeAfter - r.now().Sub(started); wait > 0 {
		if err := r.sleep(ctx, wait); err != nil {
			return row, err
		}
	}
	patch, err := ResizePatch(cfg.ResizeCPUs, cfg.ResizeMemory)
	if err != nil {
		return row, err
	}
	if _, err := r.kubectl(ctx, true, "patch", "pod", name, "--subresource", "resize", "--patch", string(patch)); err != nil {
		return row, fmt.Errorf("%s: resize: %w", label, err)
	}
	resizeAt := r.now().Sub(started).Seconds()
	r.logf("  %s: resized at %.1fs", label, resizeAt)

	// Until the pod ends: note when the kubelet applies the new limits.
	row.Status = "not applied before the pod ended"
	p, err = r.waitPod(ctx, label, cfg.Timeout, func() (podStatusObject, bool, error) {
		p, err := r.getPod(ctx, name)
		if err != nil {
			return p, false, err
		}
		if row.AppliedAtS == 0 && p.limitsApplied(cfg.ResizeCPUs, cfg.ResizeMemory) {
			row.AppliedAtS = math.Max(r.now().Sub(started).Seconds(), resizeAt)
			row.Status = "applied"
			r.logf("  %s: the kubelet applied the new limits at %.1fs", label, row.AppliedAtS)
		}
		if c := p.condition("PodResizePending"); c != nil && c.Status == "True" && row.AppliedAtS == 0 {
			row.Status = "pending (" + c.Reason + "): " + c.Message
		}
		return p, p.done(), nil
	})
	if err != nil {
		return row, err
	}
	logs, err := r.kubectl(ctx, true, "logs", name, "-c", ContainerName)
	if err != nil {
		return row, err
	}
	a, aerr := AnalyzeResize(logs, resizeAt)
	a.Variant, a.CPUsBefore, a.CPUsAfter, a.MemoryBefore, a.MemoryAfter = row.Variant, row.CPUsBefore, row.CPUsAfter, row.MemoryBefore, row.MemoryAfter
	a.AppliedAtS, a.Status = row.AppliedAtS, row.Status
	if run := RunFromPod(p, logs); run.Err != "" || run.Killed() {
		a.Err = run.Err
		if run.Killed() {
			a.Err = "OOM-killed"
		}
	} else if aerr != nil {
		a.Err = aerr.Error()
	}
	return a, nil
}

// limitsApplied reports whether the kubelet reports the workload container
// running with the given limits.
func (p podStatusObject) limitsApplied(cpus float64, mem int64) bool {
	c := p.workload()
	if c == nil || c.Resources == nil {
		return false
	}
	got, err := parseCPUQuantity(c.Resources.Limits["cpu"])
	if err != nil || math.Abs(got-cpus) > 1e-3 {
		return false
	}
	m, err := settings.ParseBytes(c.Resources.Limits["memory"])
	return err == nil && m == mem
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

func (r *Runner) writeResize(start time.Time, rows []ResizeResult) error {
	cfg := r.cfg
	if err := WriteResizeTable(r.Stdout, rows); err != nil {
		return err
	}
	if cfg.Out != "" {
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
		if err := os.WriteFile(filepath.Join(cfg.Out, ResizeMD), r.resizeMarkdown(start, rows), 0o644); err != nil {
			return err
		}
		r.logf("wrote %s", cfg.Out)
	}
	if r.failed > 0 {
		return fmt.Errorf("%d resize run(s) failed (the errors are above, and in %s with -out)", r.failed, ResizeJSON)
	}
	return nil
}

// resizeMarkdown is resize.md: the context and the table.
func (r *Runner) resizeMarkdown(start time.Time, rows []ResizeResult) []byte {
	cfg := r.cfg
	var md bytes.Buffer
	meta := r.meta(start, "")
	fmt.Fprintf(&md, "# fitgo in-place resize (kind runner)\n\n")
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
	return md.Bytes()
}
