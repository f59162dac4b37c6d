package main

import (
	"flag"
	"log"
	"strconv"
	"strings"
	"time"
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

	clusterAddrs  []string      // cluster: the nodes of a private Redis Cluster (empty: no cluster scenario)
	manyTopics    int           // manyslots: topics subscribed by the one client
	manySlots     int           // manyslots: slots per topic
	manyThreads   int           // manyslots: WithThreads per topic (0: library default)
	manyWindow    time.Duration // manyslots: idle measurement window
	manyMessages  int           // manyslots: FixedTime messages sent during the window
	backlogSizes  []int         // backlog: backlog sizes, the first is the base of the ratios
	backlogSample int           // backlog: messages consumed (timed) out of a larger backlog
	isolationN    int           // isolation: messages drained per run
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
	var clusterAddrs, backlogSizes string
	flag.StringVar(&clusterAddrs, "cluster", "", "cluster: comma list of the nodes of a private Redis Cluster (FLUSHALLed before every cluster run)")
	flag.IntVar(&c.manyTopics, "manyslots-topics", 100, "manyslots: FixedTime topics subscribed by one client")
	flag.IntVar(&c.manySlots, "manyslots-slots", 256, "manyslots: slots per topic")
	flag.IntVar(&c.manyThreads, "manyslots-threads", 0, "manyslots: WithThreads per topic (0: the library default)")
	flag.DurationVar(&c.manyWindow, "manyslots-window", 20*time.Second, "manyslots: idle measurement window")
	flag.IntVar(&c.manyMessages, "manyslots-messages", 200, "manyslots: FixedTime messages sent during the window")
	flag.StringVar(&backlogSizes, "backlog-sizes", "100000,1000000,10000000", "backlog: comma list of backlog sizes (the first is the base of the ratios)")
	flag.IntVar(&c.backlogSample, "backlog-sample", 300000, "backlog: messages consumed (timed) out of a larger backlog")
	flag.IntVar(&c.isolationN, "isolation-n", 500000, "isolation: messages drained per run (a share of two drains of n alone swings with the VM's hiccups)")
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
	c.clusterAddrs = splitList(clusterAddrs)
	for _, s := range splitList(backlogSizes) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			log.Fatalf("bad -backlog-sizes entry %q: need whole numbers >= 1000", s)
		}
		c.backlogSizes = append(c.backlogSizes, n)
	}
	if c.manyTopics < 1 || c.manySlots < 1 || c.manyMessages < 1 || c.backlogSample < 1000 || len(c.backlogSizes) == 0 {
		log.Fatal("need -manyslots-topics, -manyslots-slots, -manyslots-messages >= 1, -backlog-sample >= 1000 and a -backlog-sizes entry")
	}
	if c.isolationN < 1000 {
		log.Fatal("need -isolation-n >= 1000")
	}
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
