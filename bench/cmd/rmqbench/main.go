// Command rmqbench benchmarks RMQ against hibiken/asynq and adjust/rmq on one
// Redis server and prints markdown tables. Every scenario runs each system
// once per round, interleaved (A B C, then B C A, …), so that drifting noise
// on a shared machine hits all of them alike; the per-round ratios are the
// figures that count. Redis is emptied (FLUSHALL, MEMORY PURGE, CONFIG RESETSTAT) before
// every run. scripts/bench.sh starts a private redis-server (and, for the
// cluster scenario, a private 6-node Redis Cluster, passed as -cluster) and
// runs this.
package main

import (
	"context"
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

// env is what a run gets: the flags, the round, and an admin client for
// INFO and FLUSHALL (never handed to a system under test). With -cluster,
// cluster holds admin clients of the Cluster's nodes; a run with onCluster
// set puts its system under test on the Cluster (see onCluster).
type env struct {
	*config
	admin     *redis.Client
	cluster   *clusterNodes
	onCluster bool
	round     int
}

// newClient returns a fresh go-redis client for a system under test: on the
// single server, or on the Cluster for a cluster run.
func (e *env) newClient() redis.UniversalClient {
	if e.onCluster {
		return newClusterRedis(e.clusterAddrs)
	}
	return newRedis(e.addr)
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
	clusterScenario,
	manySlotsScenario,
	backlogScenario,
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

func run(cfg *config) error {
	ctx := context.Background()
	admin := newRedis(cfg.addr)
	defer admin.Close()
	if err := admin.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.addr, err)
	}
	var selected []*scenario
	for _, s := range allScenarios { // keep the canonical order
		if len(cfg.scenarios) == 0 || slices.Contains(cfg.scenarios, s.key) {
			selected = append(selected, s)
		}
	}
	e := &env{config: cfg, admin: admin}
	if len(cfg.clusterAddrs) > 0 {
		c, err := openCluster(ctx, cfg.clusterAddrs)
		if err != nil {
			return err
		}
		defer c.close()
		e.cluster = c
	} else if i := slices.Index(selected, clusterScenario); i >= 0 {
		if len(cfg.scenarios) > 0 {
			return fmt.Errorf("scenario cluster needs -cluster (scripts/bench.sh starts one)")
		}
		log.Print("no -cluster addresses: skipping the cluster scenario")
		selected = slices.Delete(selected, i, i+1)
	}
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
