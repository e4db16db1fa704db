package vmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Markers that the guest prints at the start of a console line. The kernel may
// print its own messages between them; everything else is ignored.
const (
	// MarkResult precedes a JSON object with a "scenario" string field.
	MarkResult = "FITGO-RESULT "
	// MarkError precedes a message about a failed step in the guest.
	MarkError = "FITGO-ERROR "
	// MarkStep precedes the name of a step of the guest's suite and the
	// guest's uptime in seconds when it started.
	MarkStep = "FITGO-STEP "
	// MarkDone is the last line the guest prints before it powers off.
	MarkDone = "FITGO-DONE"
)

// Step is one FITGO-STEP line.
type Step struct {
	Line   int
	Name   string
	Uptime time.Duration // the guest's uptime when the step started
}

// Result is one FITGO-RESULT line.
type Result struct {
	Line     int    // 1-based line number in the console output
	Scenario string // the object's "scenario" field
	// Probe is the object's "probe" field, naming the program or step that
	// printed it; it may be empty.
	Probe string
	JSON  json.RawMessage // the whole object
}

// Console is what the guest printed.
type Console struct {
	Results []Result
	Steps   []Step
	Errors  []string // messages of FITGO-ERROR lines
	Done    bool     // whether FITGO-DONE was seen
}

// Find returns the results of a scenario and probe, in console order.
func (c *Console) Find(scenario, probe string) []Result {
	var rs []Result
	for _, r := range c.Results {
		if r.Scenario == scenario && r.Probe == probe {
			rs = append(rs, r)
		}
	}
	return rs
}

// ParseConsole extracts the marked lines from console output. Lines may end in
// "\r\n" (the serial console) or "\n". A marker counts only at the start of a
// line. A FITGO-RESULT line whose payload is not a JSON object with a
// non-empty "scenario" string is an error naming the line.
func ParseConsole(out []byte) (*Console, error) {
	c := &Console{}
	for n := 1; len(out) > 0; n++ {
		var line []byte
		line, out, _ = bytes.Cut(out, []byte("\n"))
		line = bytes.TrimRight(line, "\r")
		switch {
		case bytes.HasPrefix(line, []byte(MarkResult)):
			r, err := parseResult(line[len(MarkResult):])
			if err != nil {
				return c, fmt.Errorf("console line %d: %w", n, err)
			}
			r.Line = n
			c.Results = append(c.Results, r)
		case bytes.HasPrefix(line, []byte(MarkStep)):
			st, err := parseStep(string(line[len(MarkStep):]))
			if err != nil {
				return c, fmt.Errorf("console line %d: %w", n, err)
			}
			st.Line = n
			c.Steps = append(c.Steps, st)
		case bytes.HasPrefix(line, []byte(MarkError)):
			c.Errors = append(c.Errors, string(line[len(MarkError):]))
		case string(line) == MarkDone:
			c.Done = true
		}
	}
	return c, nil
}

// parseStep parses "NAME SECONDS", SECONDS as in /proc/uptime ("12.34").
func parseStep(s string) (Step, error) {
	name, up, ok := strings.Cut(s, " ")
	secs, err := strconv.ParseFloat(up, 64)
	if !ok || name == "" || err != nil || !(secs >= 0 && secs < 1e9) {
		return Step{}, fmt.Errorf("bad step %q", s)
	}
	return Step{Name: name, Uptime: time.Duration(secs * float64(time.Second))}, nil
}

func parseResult(payload []byte) (Result, error) {
	// A map, not a struct: encoding/json matches struct fields without regard
	// to case, and the keys must be exactly "scenario" and "probe".
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil {
		return Result{}, fmt.Errorf("bad result %q: %w", payload, err)
	}
	if obj == nil {
		return Result{}, fmt.Errorf("result is not a JSON object: %q", payload)
	}
	var scenario, probe string
	if err := json.Unmarshal(obj["scenario"], &scenario); err != nil || scenario == "" {
		return Result{}, fmt.Errorf("result without a scenario: %q", payload)
	}
	if raw, ok := obj["probe"]; ok {
		if err := json.Unmarshal(raw, &probe); err != nil {
			return Result{}, fmt.Errorf("bad probe in result %q: %w", payload, err)
		}
	}
	return Result{Scenario: scenario, Probe: probe, JSON: json.RawMessage(bytes.Clone(payload))}, nil
}
