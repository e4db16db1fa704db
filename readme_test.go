package fitgo_test

// The README's own tests: its table of what fitgo sets is computed by fitgo's
// policies, its Go snippets are compiled examples, and its links, and those
// of docs/, lead somewhere.

//go:generate go test -run ^TestREADMEWhatItSets$ . -args -update

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

var update = flag.Bool("update", false, "rewrite README.md's generated table")

// readmeHostCPUs is the CPU count of the host in the README's table.
const readmeHostCPUs = 8

// readmeCase is a row of the README's table: a container's limits, written
// as the cgroup v2 files of its own cgroup.
type readmeCase struct {
	name       string
	cpu        string // cpu.max
	max, high  int64  // memory.max, memory.high (0: max)
	own, other int64  // memory charged to the process and to a co-process in its cgroup
	onParent   bool   // the limits are on the parent cgroup, none on the process's own
}

const mib = 1 << 20

var readmeCases = []readmeCase{
	{name: "0.5 CPU, 512 MiB", cpu: "50000 100000", max: 512 * mib, own: 20 * mib},
	{name: "1 CPU, 512 MiB", cpu: "100000 100000", max: 512 * mib, own: 20 * mib},
	{name: "1.5 CPUs, 512 MiB", cpu: "150000 100000", max: 512 * mib, own: 20 * mib},
	{name: "2.5 CPUs, 512 MiB", cpu: "250000 100000", max: 512 * mib, own: 20 * mib},
	{name: "1 CPU, 512 MiB beside a 200 MiB co-process", cpu: "100000 100000", max: 512 * mib, own: 20 * mib, other: 200 * mib},
	{name: "1 CPU, 512 MiB with `memory.high` 384 MiB", cpu: "100000 100000", max: 512 * mib, high: 384 * mib, own: 20 * mib},
	{name: "1 CPU, 512 MiB on a parent cgroup only (an ECS task, a slice)", cpu: "100000 100000", max: 512 * mib, own: 20 * mib, onParent: true},
}

// fsys is the case's container as the process sees it: a cgroup v2
// hierarchy whose leaf (or its parent, the pod) carries the limits, with
// their usage. The co-process's memory is anonymous, like the process's
// own, and there is no page cache.
func (c readmeCase) fsys() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	num := func(n int64) *fstest.MapFile {
		if n <= 0 {
			return file("max\n")
		}
		return file(strconv.FormatInt(n, 10) + "\n")
	}
	anon := c.own + c.other
	fsys := fstest.MapFS{
		"proc/self/cgroup":    file("0::/kubepods.slice/pod1/app\n"),
		"proc/self/mountinfo": file("25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"proc/self/status":    file(fmt.Sprintf("Name:\tapp\nRssAnon:\t%d kB\nRssFile:\t0 kB\nRssShmem:\t0 kB\n", c.own>>10)),
	}
	limited, free := "sys/fs/cgroup/kubepods.slice/pod1/app/", "sys/fs/cgroup/kubepods.slice/pod1/"
	if c.onParent {
		limited, free = free, limited
	}
	for _, dir := range []string{limited, free} {
		fsys[dir+"cgroup.controllers"] = file("cpu memory\n")
		fsys[dir+"memory.current"] = num(anon)
		fsys[dir+"memory.stat"] = file(fmt.Sprintf("anon %d\nfile 0\nkernel 0\nkernel_stack 0\npagetables 0\nsock 0\nshmem 0\n"+
			"active_anon %d\ninactive_anon 0\nactive_file 0\ninactive_file 0\nslab_reclaimable 0\nslab_unreclaimable 0\n", anon, anon))
	}
	fsys[limited+"cpu.max"], fsys[free+"cpu.max"] = file(c.cpu+"\n"), file("max 100000\n")
	fsys[limited+"memory.max"], fsys[free+"memory.max"] = num(c.max), num(0)
	fsys[limited+"memory.high"], fsys[free+"memory.high"] = num(c.high), num(0)
	return fsys
}

// readmeRow is what each of them sets for a case.
type readmeRow struct {
	procs, runtimeProcs, automaxprocs int
	memLimit, automemlimit            int64
}

// row runs fitgo's code on the case: the limits read by cgroup.ReadFS, the
// memory limit chosen and fitted by memlimit.Plan, GOMAXPROCS by the default
// Policy. The anchors' rules are fitgo's policies set to them, as maxprocs'
// and memlimit's own tests check against the rules they use to recognise
// the anchors: the runtime's is Ceil with a minimum of 2, automaxprocs' is
// Floor with a minimum of 1, both of the leaf's CPU limit only (none when a
// parent imposes it: the host's CPUs); automemlimit's is 0.9 × the tightest
// memory.max with no minimum (it ignores memory.high and the other
// processes).
func (c readmeCase) row(t *testing.T) readmeRow {
	lim, err := cgroup.ReadFS(c.fsys())
	require.NoError(t, err, c.name)
	cores, ok := lim.CPUQuota()
	require.True(t, ok, c.name)
	hard, ok := lim.MemoryMax()
	require.True(t, ok, c.name)
	// NoNonGo: the fixture's RssAnon is not this process's, whose runtime
	// would leave the rest of it as memory outside Go.
	res, err := memlimit.Plan(memlimit.Options{Limits: &lim, NoNonGo: true})
	require.NoError(t, err, c.name)
	require.True(t, res.Changed, "%s: memlimit.Plan sets nothing: %s", c.name, res.Reason)
	leafOnly := func(p maxprocs.Policy) int {
		if lim.CPU.Source != lim.CPU.Dir {
			return readmeHostCPUs
		}
		return p.Procs(cores, readmeHostCPUs)
	}
	return readmeRow{
		procs:        maxprocs.Policy{}.Procs(cores, readmeHostCPUs),
		runtimeProcs: leafOnly(maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 2}),
		automaxprocs: leafOnly(maxprocs.Policy{Rounding: maxprocs.Floor}),
		memLimit:     res.After,
		automemlimit: memlimit.Policy{Ratio: 0.9, Min: -1}.SoftLimit(hard),
	}
}

// readmeMiB writes n in MiB as the README does: 460.8 MiB, 384 MiB.
func readmeMiB(n int64) string {
	return strconv.FormatFloat(float64(n)/mib, 'f', 1, 64) + " MiB"
}

// whatItSets is the README's table and its note.
func whatItSets(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| limits of the container | GOMAXPROCS: fitgo | Go ≥ 1.25 runtime | automaxprocs | GOMEMLIMIT: fitgo | automemlimit | Go runtime |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range readmeCases {
		r := c.row(t)
		fmt.Fprintf(&b, "| %s | **%d** | %d | %d | **%s** | %s | none |\n", c.name,
			r.procs, r.runtimeProcs, r.automaxprocs, readmeMiB(r.memLimit), readmeMiB(r.automemlimit))
	}
	fmt.Fprintf(&b, "\nOn a host with %d CPUs. The runtime's column is for a module whose `go` line is 1.25 or later;\n"+
		"with 1.24 or older, GOMAXPROCS is the host's %d CPUs. The co-process holds 200 MiB the kernel\n"+
		"cannot reclaim. In the last row the container's own cgroup has no limit, and the runtime and\n"+
		"automaxprocs, which read only that one, see none.\n", readmeHostCPUs, readmeHostCPUs)
	return b.String()
}

const (
	tableStart = "<!-- what-it-sets: TestREADMEWhatItSets computes this table; `go generate .` rewrites it -->\n"
	tableEnd   = "<!-- end what-it-sets -->\n"
)

// TestREADMEWhatItSets checks the README's table of what fitgo sets against
// what fitgo's policies compute for those limits; with -update it rewrites
// the table.
func TestREADMEWhatItSets(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memlimit.Plan reads no limits off Linux")
	}
	for _, v := range []string{"GOMEMLIMIT", "FITGO_MEMORY_LIMIT"} {
		if os.Getenv(v) != "" {
			t.Skipf("%s is set in the environment: memlimit.Plan follows it, not the table's limits", v)
		}
	}
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	i, j := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	require.True(t, i >= 0 && j > i, "README.md has no %q ... %q section", tableStart, tableEnd)
	want := whatItSets(t)
	if *update {
		readme = readme[:i+len(tableStart)] + want + readme[j:]
		require.NoError(t, os.WriteFile("README.md", []byte(readme), 0o644))
		return
	}
	assert.Equal(t, want, readme[i+len(tableStart):j],
		"README.md's table of what fitgo sets is not what the code computes: run go generate . in the repository's root")
}

// block is a fenced code block of a Markdown file.
type block struct {
	lang, text string
	line       int
}

// fencedBlocks returns the code blocks of md, fences indented or not.
func fencedBlocks(md string) []block {
	var blocks []block
	var cur *block
	var lines []string
	for n, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{lang: strings.TrimPrefix(trimmed, "```"), line: n + 1}
			lines = nil
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			cur.text = strings.Join(lines, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		}
	}
	return blocks
}

// repoFiles returns the repository's files (relative, slash-separated)
// for which keep is true, outside .git, testdata and build output.
func repoFiles(t *testing.T, keep func(string) bool) []string {
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "out", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if p = filepath.ToSlash(p); keep(p) {
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// goSnippets returns what a README Go snippet may be: every file under an
// examples/ directory, and the body of every Example function (without its
// output comment, one tab less), each with its name.
func goSnippets(t *testing.T) map[string]string {
	snippets := map[string]string{}
	for _, p := range repoFiles(t, func(p string) bool { return strings.HasSuffix(p, ".go") }) {
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		if strings.HasPrefix(p, "examples/") || strings.Contains(p, "/examples/") {
			snippets[strings.TrimRight(string(src), "\n")] = p
		}
		if !strings.HasSuffix(p, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
			var lines []string
			for _, line := range strings.Split(strings.Trim(body, "\n"), "\n") {
				if l := strings.TrimSpace(line); l == "// Output:" || l == "// Unordered output:" {
					break
				}
				lines = append(lines, strings.TrimPrefix(line, "\t"))
			}
			snippets[strings.TrimRight(strings.Join(lines, "\n"), "\n")] = p + ": " + fn.Name.Name
		}
	}
	return snippets
}

// isExcerpt reports whether want's lines are consecutive lines of file,
// all with the same indent removed.
func isExcerpt(file, want string) bool {
	fl, wl := strings.Split(file, "\n"), strings.Split(want, "\n")
	for i := range fl {
		indent := len(fl[i]) - len(strings.TrimLeft(fl[i], " "))
		if i+len(wl) > len(fl) || strings.TrimLeft(fl[i], " ") != wl[0] {
			continue
		}
		ok := true
		for k, w := range wl {
			f := fl[i+k]
			if w == "" && strings.TrimSpace(f) == "" {
				continue
			}
			if len(f) < indent || strings.TrimLeft(f[:indent], " ") != "" || f[indent:] != w {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestREADMESnippets: each Go snippet of the README is a compiled example,
// each YAML snippet is an excerpt of a manifest under examples/, and the
// README's test command is the one CI runs.
func TestREADMESnippets(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	snippets := goSnippets(t)
	manifests := repoFiles(t, func(p string) bool {
		return strings.HasPrefix(p, "examples/") && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"))
	})
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	nGo := 0
	for _, bl := range fencedBlocks(string(b)) {
		switch bl.lang {
		case "go":
			nGo++
			_, ok := snippets[strings.TrimRight(bl.text, "\n")]
			assert.True(t, ok, "README.md:%d: the Go snippet is neither a file under examples/ nor the body of an Example function:\n%s", bl.line, bl.text)
		case "yaml":
			found := false
			for _, m := range manifests {
				data, err := os.ReadFile(m)
				require.NoError(t, err)
				found = found || isExcerpt(string(data), bl.text)
			}
			assert.True(t, found, "README.md:%d: the YAML snippet is in no manifest under examples/:\n%s", bl.line, bl.text)
		case "sh":
			for _, line := range strings.Split(bl.text, "\n") {
				if cmd, _, _ := strings.Cut(line, "#"); strings.HasPrefix(cmd, "go test ") {
					assert.Contains(t, string(ci), strings.TrimSpace(cmd), "README.md:%d: CI does not run the README's test command", bl.line)
				}
			}
		}
	}
	assert.GreaterOrEqual(t, nGo, 4, "the README's Go snippets: the blank import, the report, the explicit API, the metrics")
}

// githubAnchor is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces turned into hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// anchors returns the anchors of the headings of md, with GitHub's suffixes
// (-1, -2, ...) for repeated ones.
func anchors(md string) map[string]bool {
	set, seen := map[string]bool{}, map[string]int{}
	for _, pl := range proseLines(md) {
		m := headingRE.FindStringSubmatch(pl.text)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			set[a+"-"+strconv.Itoa(n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// proseLine is a line of a Markdown file outside its code blocks.
type proseLine struct {
	n    int // from 1
	text string
}

// proseLines returns the lines of md outside fenced code blocks.
func proseLines(md string) []proseLine {
	var out []proseLine
	in := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, proseLine{i + 1, line})
		}
	}
	return out
}

// TestREADMELinks: every relative link of README.md, docs/*.md and the
// examples' READMEs names a file of the repository and, with #anchor, a heading of that Markdown file.
func TestREADMELinks(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	examples, err := filepath.Glob("examples/*/README.md")
	require.NoError(t, err)
	files := append(append([]string{"README.md"}, docs...), examples...)
	n := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, pl := range proseLines(string(b)) {
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(pl.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				p, anchor, _ := strings.Cut(target, "#")
				dest := file
				if p != "" {
					dest = path.Join(path.Dir(file), p)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: no file %s", file, pl.n, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				md, err := os.ReadFile(dest)
				if !assert.NoError(t, err, "%s: link %q", file, target) {
					continue
				}
				assert.True(t, anchors(string(md))[anchor], "%s:%d: link %q: %s has no heading with anchor #%s",
					file, pl.n, target, dest, anchor)
			}
		}
	}
	assert.Greater(t, n, 10, "relative links checked")

	// The package docs link to the README's sections by URL.
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	sections := anchors(string(readme))
	docURL := regexp.MustCompile(`https://github\.com/fitgo/fitgo#([^\s)]+)`)
	for _, file := range []string{"doc.go", "maxprocs/doc.go", "memlimit/doc.go", "cgroup/doc.go"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		links := docURL.FindAllStringSubmatch(string(b), -1)
		assert.NotEmpty(t, links, "%s links to no section of the README", file)
		for _, m := range links {
			assert.True(t, sections[m[1]], "%s: the README has no section #%s", file, m[1])
		}
	}
}

// TestGitHubAnchor pins the anchor rules the link test relies on.
func TestGitHubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"How GOMAXPROCS is rounded: the sweep":                   "how-gomaxprocs-is-rounded-the-sweep",
		"Configuration: FITGO and the environment":               "configuration-fitgo-and-the-environment",
		"The headroom: memory shared with other processes":       "the-headroom-memory-shared-with-other-processes",
		"Migrating from automaxprocs or automemlimit":            "migrating-from-automaxprocs-or-automemlimit",
		"Cooperating with the Go 1.25+ runtime":                  "cooperating-with-the-go-125-runtime",
		"`Status`, `Plan` and the Result":                        "status-plan-and-the-result",
		"Memory the process does not own alone: shared and leak": "memory-the-process-does-not-own-alone-shared-and-leak",
	} {
		assert.Equal(t, want, githubAnchor(heading), heading)
	}
	assert.Equal(t, map[string]bool{"a": true, "a-1": true, "b": true}, anchors("# A\n```\n# not a heading\n```\n## A\n### B\n"))
}
