// Package fitgoprom exports what fitgo sees of the process's container as
// Prometheus metrics: the effective CPU and memory limits, CFS throttling,
// memory usage, working set and events, and pressure stall information.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(fitgoprom.NewCollector(), collectors.NewGoCollector())
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The collector reads the cgroup files on each scrape, through files it keeps
// open ([cgroup.Watcher]), so the reading itself allocates nothing. The names
// follow cAdvisor's where it has one (container_cpu_cfs_throttled_periods_total
// is fitgo_cpu_cfs_throttled_periods_total), so dashboards translate:
//
//	fitgo_cpu_limit_cores                    gauge    effective CPU limit (quota/period), when there is one
//	fitgo_cpu_cfs_periods_total              counter  enforcement periods with runnable tasks
//	fitgo_cpu_cfs_throttled_periods_total    counter  periods that ended throttled
//	fitgo_cpu_cfs_throttled_seconds_total    counter  time throttled
//	fitgo_cpu_cfs_bursts_total               counter  periods that used burst capacity
//	fitgo_cpu_cfs_burst_seconds_total        counter  burst time used
//	fitgo_cpu_usage_seconds_total            counter  CPU time of the cgroup
//	fitgo_memory_limit_bytes                 gauge    effective hard memory limit, when there is one
//	fitgo_memory_high_bytes                  gauge    effective memory.high (v2), when there is one
//	fitgo_memory_usage_bytes                 gauge    usage, page cache included
//	fitgo_memory_working_set_bytes           gauge    usage less inactive page cache (what the kubelet evicts on)
//	fitgo_memory_max_usage_bytes             gauge    peak usage (v2 memory.peak, v1 max_usage_in_bytes)
//	fitgo_memory_events_total{event}         counter  memory.events: low, high, max, oom, oom_kill, oom_group_kill (v1: max, oom_kill)
//	fitgo_pressure_stalled_seconds_total{resource,kind}  counter  PSI totals: resource cpu, memory, io; kind some, full
//	fitgo_cgroup_info{...}                   gauge 1  the directories of the limits and the policies applied
//	fitgo_read_errors_total                  counter  scrapes whose reading of a cgroup file failed
//
// A counter or gauge whose file the kernel does not have (no PSI on cgroup
// v1, no memory.peak before Linux 5.19) is left out, not reported as zero.
// CPU and memory counters come from the directory that imposes the limit
// (the one where throttling and OOM kills happen), or the process's own
// cgroup when there is no limit; pressure from the process's own cgroup.
// The pressure averages (avg10 and so on) are not exported: rate() over the
// totals gives any window.
//
// The collector does not export GOMAXPROCS or GOMEMLIMIT: the Go collector
// (collectors.NewGoCollector) already exports them as
// go_sched_gomaxprocs_threads and go_gc_gomemlimit_bytes.
//
// The throttled share of CPU periods over five minutes, in PromQL:
//
//	rate(fitgo_cpu_cfs_throttled_periods_total[5m]) / rate(fitgo_cpu_cfs_periods_total[5m])
package fitgoprom
