// Command promprobe keeps -threads goroutines spinning for -for, then
// gathers fitgoprom.NewCollector() in a pedantic registry and prints the
// samples as one FITGO-RESULT line (report.Prom). The real-kernel tests run
// it in a cgroup they made: on the host (cgroup v1) and in the qemu rig
// (cgroup v2).
//
//	promprobe -scenario S [-threads N] [-for D]
package main

import (
	"flag"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fitgo/fitgo/fitgoprom"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
)

func main() {
	scenario := flag.String("scenario", "", "scenario name printed with the result")
	threads := flag.Int("threads", 2, "goroutines spinning at once")
	spinFor := flag.Duration("for", 1500*time.Millisecond, "how long they spin")
	flag.Parse()
	if *scenario == "" {
		report.Fail("-scenario is required")
	}
	start := time.Now()
	spin(*threads, start.Add(*spinFor))
	r := report.Prom{Header: report.Header{Scenario: *scenario, Probe: "prom"}, Threads: *threads, Wall: time.Since(start)}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(fitgoprom.NewCollector())
	mfs, err := reg.Gather()
	if err != nil {
		r.GatherErr = err.Error()
	}
	r.Samples = map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				r.Samples[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				r.Samples[key] = m.GetCounter().GetValue()
			}
		}
	}
	report.Emit(r)
}

var sink struct {
	sync.Mutex
	v uint64
}

// spin keeps n goroutines busy until deadline.
func spin(n int, deadline time.Time) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for time.Now().Before(deadline) {
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			sink.Lock()
			sink.v += x
			sink.Unlock()
		}()
	}
	wg.Wait()
}
