package testprog

// State is one line of a test program's output.
type State struct {
	Millis     int64  `json:"ms"` // since the program started reporting
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOMEMLIMIT int64  `json:"gomemlimit"`
	MaxProcs   string `json:"maxprocs"` // the init result, first line only
	MemLimit   string `json:"memlimit"` // the init result, first line only
	Changed    bool   `json:"changed"`  // the init changed something, first line only
	Err        string `json:"err,omitempty"`

	MaxProcsFollowing bool   `json:"maxprocs_following"`
	MaxProcsReason    string `json:"maxprocs_reason,omitempty"`
	MemLimitFollowing bool   `json:"memlimit_following"`
	MemLimitReason    string `json:"memlimit_reason,omitempty"`
	MemLimitEvents    bool   `json:"memlimit_events"`  // its Status has memory events
	NonGo             int64  `json:"non_go,omitempty"` // its Status's memory outside Go
	Floor             int64  `json:"floor,omitempty"`  // its Status's floor
	Avail             int64  `json:"avail,omitempty"`  // its Status's Limit: the memory available
	GOGC              int    `json:"gogc"`             // the runtime's, read without setting it
	HeapGoal          uint64 `json:"heap_goal"`        // the runtime's, at the last GC or GOGC change
	GCCeiling         int64  `json:"gc_ceiling"`       // memlimit's GC policy: Status().GC
	GCReason          string `json:"gc_reason,omitempty"`
	GCStatus          int    `json:"gc_status"`            // Status().GC.GOGC: what memlimit reports in force
	GOGCReads         int64  `json:"gogc_reads,omitempty"` // reads of GOGC by the command gogcread

	Acks   int    `json:"acks"`             // commands handled so far
	Report bool   `json:"report,omitempty"` // the line a "report" command asked for
	Done   string `json:"done,omitempty"`   // the command read, map or churn is done (or its error)
	Tick   int    `json:"tick,omitempty"`   // of a program that reports each tick of its own (blanksaw)
	Phase  string `json:"phase,omitempty"`  // of that program's shape
}
