// Command rmqbench benchmarks RMQ against hibiken/asynq and adjust/rmq on one
// Redis server and prints markdown tables. Every scenario runs each system
// once per round, interleaved (A B C, then B C A, …), so that drifting noise
// on a shared machine hits all of them alike; the per-round ratios are the
// figures that count. Redis is emptied (FLUSHALL, CONFIG RESETSTAT) before
// every run. scripts/bench.sh starts a private redis-server and runs this.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// config holds the command-line flags.
type config struct {
	addr      string
	rounds    int
	n         int
	scenarios []string
	systems   []string
	variant   string
	commit    string
	runLimit  time.Duration

	produceGoroutines int           // produce, merge: concurrent senders
	rmqThreads        int           // consume: RMQ threads on the 64-slot topic
	rmqBatch          int           // consume: RMQ WithBatchSize (0: library default)
	asynqConc         int           // consume: asynq Concurrency
	adjustPrefetch    int64         // consume: adjust/rmq prefetch limit
	adjustPoll        time.Duration // consume: adjust/rmq poll duration
	adjustWorkers     int           // consume: adjust/rmq consumers
	idleWindow        time.Duration // idle: measurement window
	mergeRange        time.Duration // merge: RangeMerge TimeRange
	cmdstats          bool          // print the top Redis commands of every run to stderr
	cpuProfile        string
}

// env is what a run gets: the flags, the round, and an admin client for
// INFO and FLUSHALL (never handed to a system under test).
type env struct {
	*config
	admin *redis.Client
	round int
}

// metrics are the figures one run produced, by name (see report.go).
type metrics map[string]float64

// variant is one system (or configuration of one) inside a scenario.
type variant struct {
	system string // rmq, asynq, adjust or bare; what -systems filters on
	name   string // row label in the tables
	run    func(ctx context.Context, e *env) (metrics, error)
}

// scenario is one benchmark: its variants and how to report them.
type scenario struct {
	key      string
	variants func(cfg *config) []variant
	report   func(rep *report, res *scenarioResults)
}

var allScenarios = []*scenario{
	produceScenario,
	consumeScenario,
	punctualityScenario,
	memoryScenario,
	idleScenario,
	mergeScenario,
	scalingScenario,
	isolationScenario,
}

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("[rmqbench] ")
	cfg := parseFlags()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if err := run(cfg); err != nil {
		log.Print(err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func parseFlags() *config {
	c := &config{}
	var scen, sys string
	flag.StringVar(&c.addr, "redis", "127.0.0.1:16400", "Redis address (a server of its own: it is FLUSHALLed before every run)")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds")
	flag.IntVar(&c.n, "n", 100000, "messages per run")
	flag.StringVar(&scen, "scenarios", "", "comma list of scenarios (default all): "+scenarioKeys())
	flag.StringVar(&sys, "systems", "", "comma list of systems to run (default all): rmq,asynq,adjust,bare")
	flag.StringVar(&c.variant, "variant", "", "run only variants whose name contains this (for profiling)")
	flag.StringVar(&c.commit, "commit", "", "RMQ commit to print in the header (scripts/bench.sh passes git's)")
	flag.DurationVar(&c.runLimit, "run-limit", 5*time.Minute, "abort a single run after this long")
	flag.IntVar(&c.produceGoroutines, "produce-goroutines", 16, "produce, merge: goroutines sending one message per call")
	flag.IntVar(&c.rmqThreads, "rmq-threads", 8, "consume: RMQ threads on the 64-slot Priority topic")
	flag.IntVar(&c.rmqBatch, "rmq-batch", 1000, "consume/scaling: RMQ WithBatchSize (0: library default; when set, consume also runs RMQ with the default)")
	flag.IntVar(&c.asynqConc, "asynq-concurrency", 64, "consume: asynq Config.Concurrency")
	flag.Int64Var(&c.adjustPrefetch, "adjust-prefetch", 1000, "consume: adjust/rmq prefetch limit")
	flag.DurationVar(&c.adjustPoll, "adjust-poll", time.Millisecond, "consume: adjust/rmq poll duration")
	flag.IntVar(&c.adjustWorkers, "adjust-consumers", 16, "consume: adjust/rmq consumers")
	flag.DurationVar(&c.idleWindow, "idle-window", 20*time.Second, "idle: measurement window")
	flag.DurationVar(&c.mergeRange, "merge-range", 10*time.Second, "merge: TimeRange of the RangeMerge messages")
	flag.BoolVar(&c.cmdstats, "cmdstats", false, "print the top Redis commands (INFO commandstats) of each timed section to stderr")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark process to this file")
	flag.Parse()
	if c.rounds < 1 || c.n < 1000 {
		log.Fatal("need -rounds >= 1 and -n >= 1000")
	}
	c.scenarios = splitList(scen)
	for _, s := range c.scenarios {
		if findScenario(s) == nil {
			log.Fatalf("unknown scenario %q; known: %s", s, scenarioKeys())
		}
	}
	c.systems = splitList(sys)
	return c
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func scenarioKeys() string {
	keys := make([]string, len(allScenarios))
	for i, s := range allScenarios {
		keys[i] = s.key
	}
	return strings.Join(keys, ",")
}

func findScenario(key string) *scenario {
	for _, s := range allScenarios {
		if s.key == key {
			return s
		}
	}
	return nil
}

func run(cfg *config) error {
	ctx := context.Background()
	admin := newRedis(cfg.addr)
	defer admin.Close()
	if err := admin.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.addr, err)
	}
	selected := allScenarios
	if len(cfg.scenarios) > 0 {
		selected = nil
		for _, s := range allScenarios { // keep the canonical order
			if slices.Contains(cfg.scenarios, s.key) {
				selected = append(selected, s)
			}
		}
	}
	e := &env{config: cfg, admin: admin}
	res := make(map[string]*scenarioResults)
	begin := time.Now()
	for round := 1; round <= cfg.rounds; round++ {
		e.round = round
		for _, sc := range selected {
			vs := filterVariants(sc.variants(cfg), cfg.systems, cfg.variant)
			if res[sc.key] == nil {
				res[sc.key] = newScenarioResults(vs, cfg.rounds)
			}
			// Rotate the order every round: nobody always runs first.
			for i := range vs {
				v := vs[(i+round-1)%len(vs)]
				m, err := runOne(ctx, e, sc, v)
				if err != nil {
					log.Printf("round %d %s / %s: FAILED: %v", round, sc.key, v.name, err)
					res[sc.key].fail(v.name, round, err)
					continue
				}
				res[sc.key].put(v.name, round, m)
			}
		}
	}
	log.Printf("all rounds done in %s", time.Since(begin).Round(time.Second))
	rep := newReport(os.Stdout, cfg)
	if err := rep.header(ctx, e, selected); err != nil {
		return err
	}
	for _, sc := range selected {
		if r := res[sc.key]; r != nil && len(r.order) > 0 {
			sc.report(rep, r)
		}
	}
	rep.writeTargets()
	for _, sc := range selected {
		if r := res[sc.key]; r != nil {
			rep.writeFailures(sc.key, r)
		}
	}
	return nil
}

func filterVariants(vs []variant, systems []string, name string) []variant {
	var out []variant
	for _, v := range vs {
		if (len(systems) == 0 || slices.Contains(systems, v.system)) && strings.Contains(v.name, name) {
			out = append(out, v)
		}
	}
	return out
}

// runOne runs one variant on an empty Redis and checks that it left no
// goroutines behind.
func runOne(ctx context.Context, e *env, sc *scenario, v variant) (metrics, error) {
	if err := resetRedis(ctx, e.admin); err != nil {
		return nil, err
	}
	runtime.GC()
	goroutines := runtime.NumGoroutine()
	rctx, cancel := context.WithTimeout(ctx, e.runLimit)
	defer cancel()
	start := time.Now()
	m, err := v.run(rctx, e)
	if err != nil {
		return nil, err
	}
	log.Printf("round %d %-11s %-32s %5.1fs  %s", e.round, sc.key, v.name, time.Since(start).Seconds(), summary(m))
	// adjust/rmq v5 has no public way to stop a connection's heartbeat
	// goroutine; it ends by itself once its (closed) client has failed 45
	// times, so allow a few of those to linger.
	time.Sleep(50 * time.Millisecond)
	if extra := runtime.NumGoroutine() - goroutines; extra > 0 && v.system != "adjust" {
		log.Printf("warning: %d goroutines more than before the run", extra)
	}
	return m, nil
}
