package fitgoprom_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fitgo/fitgo/fitgoprom"
)

// A program serves /metrics with fitgo's collector next to the Go
// collector, which already exports GOMAXPROCS and GOMEMLIMIT. A program
// would register fitgoprom.NewCollector() and listen with
// http.ListenAndServe; here the collector reads a copy of a container's
// files (half a CPU, 256 MiB) and a test server takes the scrape.
func ExampleNewCollector() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		fitgoprom.NewCollector(fitgoprom.WithFS(os.DirFS("../cgroup/testdata/stats-v2"))),
		collectors.NewGoCollector(),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "fitgo_cpu_") || strings.HasPrefix(line, "fitgo_memory_limit") {
			fmt.Println(line)
		}
	}
	// Output:
	// fitgo_cpu_cfs_burst_seconds_total 0.002
	// fitgo_cpu_cfs_bursts_total 1
	// fitgo_cpu_cfs_periods_total 30
	// fitgo_cpu_cfs_throttled_periods_total 24
	// fitgo_cpu_cfs_throttled_seconds_total 1.1
	// fitgo_cpu_limit_cores 0.5
	// fitgo_cpu_usage_seconds_total 1.7
	// fitgo_memory_limit_bytes 2.68435456e+08
}
