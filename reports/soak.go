package reports

import "time"

// Soak is what agentlab run --soak sampled: after every iteration of the
// selection, per device, the runtime's and the host adb server's figures.
// A series that grew past its bound failed the run (the lab/soak
// scenario names it).
type Soak struct {
	DurationMs int64        `json:"durationMs"`
	Iterations int          `json:"iterations"`
	Series     []SoakSeries `json:"series"`
}

// SoakSeries is one figure of one device (or of the host's adb server,
// device "host") over the iterations.
type SoakSeries struct {
	Device string `json:"device"`
	// Metric is "runtime.rss", "runtime.fds", "runtime.goroutines",
	// "runtime.store", "adb.rss" or "adb.fds".
	Metric string `json:"metric"`
	// Unit is "bytes" or "count".
	Unit    string       `json:"unit"`
	Samples []SoakSample `json:"samples"`
	// Growth is what the growth rule measured, Bound what it allows; Grew
	// says the series broke it.
	Growth float64 `json:"growth"`
	Bound  float64 `json:"bound"`
	Grew   bool    `json:"grew"`
}

// SoakSample is one figure after one iteration.
type SoakSample struct {
	Iteration int       `json:"iteration"`
	At        time.Time `json:"at"`
	Value     float64   `json:"value"`
}
