package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Metric names. Rates are messages per second; CPU figures are seconds of
// CPU per 100k messages; lateness figures are milliseconds.
const (
	mElapsed   = "elapsed_s"
	mRate      = "msgs_per_s"
	mClientCPU = "client_cpu_s_per_100k"
	mRedisCPU  = "redis_cpu_s_per_100k"
	mRedisBusy = "redis_busy" // Redis CPU seconds per wall second of the section

	mRedisMasterCPU = "redis_master_cpu_s_per_100k" // the Cluster's masters alone (= mRedisCPU on one server)

	mLateP50  = "late_p50_ms"
	mLateP99  = "late_p99_ms"
	mLateMax  = "late_max_ms"
	mLateMin  = "late_min_ms" // the earliest delivery; negative = early
	mEarly    = "early"       // deliveries before their due time
	mMissing  = "missing"     // messages never delivered within the wait
	mReceived = "received"

	mBytesPerMsg = "bytes_per_msg"

	mIssuedPerSec  = "issued_cmds_per_s" // commands the worker's client sent
	mServerPerSec  = "server_cmds_per_s" // commandstats calls, Lua-internal commands included
	mIssuedPerSlot = "issued_cmds_per_slot_s"
	mServerPerSlot = "server_cmds_per_slot_s"

	mCalls = "listener_calls"
)

// summary is a one-line digest of a run for the progress log.
func summary(m metrics) string {
	var parts []string
	for _, k := range []string{mRate, mLateP50, mLateP99, mLateMax, mLateMin, mBytesPerMsg, mIssuedPerSlot, mCalls, mClientCPU, mRedisCPU} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", k, num(v)))
		}
	}
	return strings.Join(parts, " ")
}

// scenarioResults holds every run of one scenario: per variant, one metrics
// per round (nil where the run failed).
type scenarioResults struct {
	order  []string
	runs   map[string][]metrics
	errs   map[string][]error
	rounds int
}

func newScenarioResults(vs []variant, rounds int) *scenarioResults {
	r := &scenarioResults{runs: map[string][]metrics{}, errs: map[string][]error{}, rounds: rounds}
	for _, v := range vs {
		r.order = append(r.order, v.name)
		r.runs[v.name] = make([]metrics, rounds)
		r.errs[v.name] = make([]error, rounds)
	}
	return r
}

func (r *scenarioResults) put(name string, round int, m metrics)  { r.runs[name][round-1] = m }
func (r *scenarioResults) fail(name string, round int, err error) { r.errs[name][round-1] = err }

// has reports whether variant name ran at all (it may be filtered out).
func (r *scenarioResults) has(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.runs[name]
	return ok
}

// values returns metric key of variant name over the rounds that produced it.
func (r *scenarioResults) values(name, key string) []float64 {
	var out []float64
	for _, m := range r.runs[name] {
		if v, ok := m[key]; ok {
			out = append(out, v)
		}
	}
	return out
}

// perRound returns metric key of variant name per round (NaN where missing,
// all NaN for a variant that did not run).
func (r *scenarioResults) perRound(name, key string) []float64 {
	out := make([]float64, r.rounds)
	runs := r.runs[name]
	for i := range out {
		out[i] = math.NaN()
		if i >= len(runs) {
			continue
		}
		if m := runs[i]; m != nil {
			if v, ok := m[key]; ok {
				out[i] = v
			}
		}
	}
	return out
}

// median of the non-NaN values; NaN if there are none.
func median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// ratios returns a[i]/b[i] per round.
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

// targetRow is one target of the issue next to its measurement.
type targetRow struct {
	name, goal, measured string
	verdict              string // PASS, MISS, or "n/a" when not measured
}

// report writes the markdown report and collects the targets.
type report struct {
	w       io.Writer
	cfg     *config
	targets []targetRow
}

func newReport(w io.Writer, cfg *config) *report { return &report{w: w, cfg: cfg} }

func (r *report) printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

// target records a target; ok is nil when the measurement is missing.
func (r *report) target(name, goal, measured string, ok *bool) {
	v := "n/a"
	if ok != nil {
		v = "MISS"
		if *ok {
			v = "PASS"
		}
	}
	r.targets = append(r.targets, targetRow{name, goal, measured, v})
}

// verdict turns a comparison on a possibly missing value into target's ok.
func verdict(v float64, pass func(float64) bool) *bool {
	if math.IsNaN(v) {
		return nil
	}
	ok := pass(v)
	return &ok
}

// writeTargets prints the summary table of every target.
func (r *report) writeTargets() {
	if len(r.targets) == 0 {
		return
	}
	r.printf("## Targets\n\nEach measured value is the median over the rounds (of per-round ratios where it is a ratio).\n\n")
	t := newTable("Target", "Goal", "Measured", "Result")
	for _, x := range r.targets {
		res := x.verdict
		if res != "n/a" {
			res = "**" + res + "**"
		}
		t.add(x.name, x.goal, x.measured, res)
	}
	t.write(r.w)
}

// cpuCells are the two CPU columns of a variant: client and Redis, per 100k messages.
func cpuCells(res *scenarioResults, name string) []string {
	return []string{stat(res.values(name, mClientCPU), cpuSec), stat(res.values(name, mRedisCPU), cpuSec)}
}

// writeFailures lists the runs of a scenario that failed; their figures are
// missing from the tables above.
func (r *report) writeFailures(key string, res *scenarioResults) {
	for _, name := range res.order {
		for i, err := range res.errs[name] {
			if err != nil {
				r.printf("- FAILED: %s / %s, round %d: %v\n", key, name, i+1, err)
			}
		}
	}
}
