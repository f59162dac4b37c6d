package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
)

// demoConfig is how one demo run is set up.
type demoConfig struct {
	addrs    []string // a real Redis or Cluster; none: an in-process miniredis
	cluster  bool     // a single address is a Cluster node
	keep     bool     // keep consuming after the scenario until ctx ends
	verbose  bool     // the library's warnings on stderr
	deadline time.Duration
	stderr   io.Writer
}

// setupDemo defines "rmq demo".
func setupDemo(fs *flag.FlagSet) runFunc {
	cfg := demoConfig{}
	rf := addRedisFlags(fs, "", "run on the real Redis at `ADDR[,ADDR…]` instead of an in-process one")
	fs.BoolVar(&cfg.keep, "keep", false, "keep consuming after the scenario, until Ctrl-C")
	fs.BoolVar(&cfg.verbose, "v", false, "log the library's warnings on stderr")
	fs.DurationVar(&cfg.deadline, "deadline", 45*time.Second, "fail if the scenario has not completed within this `duration`")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if cfg.deadline <= 0 {
			return usagef("-deadline %v is not positive", cfg.deadline)
		}
		cfg.addrs, cfg.cluster, cfg.stderr = rf.list(), rf.cluster, e.stderr
		return runDemo(ctx, e.out, cfg)
	}
}

// runDemo is "rmq demo": it sets up Redis and a client, plays the scenario
// while the client consumes, prints the summary, stats and dead messages, and
// stops the client. It fails if the scenario does not complete within
// cfg.deadline.
func runDemo(ctx context.Context, p *printer, cfg demoConfig) error {
	r, ns, redisArgs, release, err := demoRedis(ctx, p, cfg)
	if err != nil {
		return err
	}
	defer release()
	opts := []rmq.Option{rmq.WithNamespace(ns), rmq.WithRetryBackoff(rmq.SteppedBackoff(retryWait))}
	if cfg.verbose && cfg.stderr != nil {
		opts = append(opts, rmq.WithLogger(slog.New(slog.NewTextHandler(cfg.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}
	c, err := rmq.New(r, opts...)
	if err != nil {
		return err
	}
	s := newScenario(c, p)
	if err := s.setup(ctx); err != nil {
		c.Close(context.Background())
		return err
	}

	// The client consumes until Close; if it stops early, the scenario ends too.
	live, stopLive := context.WithCancelCause(ctx)
	defer stopLive(nil)
	stopped := make(chan error, 1)
	go func() {
		err := c.Start(context.Background())
		stopLive(fmt.Errorf("the consumer stopped: %v", err))
		stopped <- err
	}()

	p.printf("\n")
	err = playWithin(live, s, cfg.deadline)
	if err == nil {
		p.printf("%8s  scenario complete\n", p.elapsed(time.Now()))
		s.summarize()
		err = report(ctx, p, c)
	}
	if err == nil && cfg.keep {
		p.printf("\n-keep: still consuming namespace %s; Ctrl-C to stop. Meanwhile, try in another terminal:\n", ns)
		p.printf("  rmq requeue %s -namespace %s %s\n", redisArgs, ns, renderTopic)
		<-live.Done()
		p.printf("%8s  stopping\n", p.elapsed(time.Now()))
	}

	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(err, c.Close(closeCtx), <-stopped)
	if len(cfg.addrs) > 0 {
		err = errors.Join(err, cleanup(p, r, ns))
	}
	return err
}

// playWithin plays s and fails if it takes longer than d. A step cut short
// while it called Redis (a Send under way, whose error is go-redis's) fails
// with the reason the scenario ended first, as a step that waits does.
func playWithin(ctx context.Context, s *scenario, d time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("the scenario did not complete within %v", d))
	defer cancel()
	err := s.play(ctx)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}

// demoRedis returns the Redis the demo runs on, its namespace, the rmq flags
// that reach it, and a function that releases it: an in-process miniredis, or
// the Redis at cfg.addrs with a fresh namespace "demo-<random>".
func demoRedis(ctx context.Context, p *printer, cfg demoConfig) (r redis.UniversalClient, ns, args string, release func(), err error) {
	if len(cfg.addrs) == 0 {
		m, err := miniredis.Run()
		if err != nil {
			return nil, "", "", nil, fmt.Errorf("start miniredis: %w", err)
		}
		r := redis.NewClient(&redis.Options{Addr: m.Addr()})
		p.printf("RMQ demo on an in-process Redis (miniredis at %s); -redis ADDR runs it on a real one\n", m.Addr())
		return r, "demo", "-redis " + m.Addr(), func() { r.Close(); m.Close() }, nil
	}
	r, err = dial(ctx, cfg.addrs, cfg.cluster)
	if err != nil {
		return nil, "", "", nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns = "demo-" + hex.EncodeToString(b[:])
	kind, args := "Redis", "-redis "+strings.Join(cfg.addrs, ",")
	if _, ok := r.(*redis.ClusterClient); ok {
		kind = "Redis Cluster"
		if cfg.cluster {
			args += " -cluster"
		}
	}
	p.printf("RMQ demo on %s %s, namespace %s\n", kind, strings.Join(cfg.addrs, ","), ns)
	return r, ns, args, func() { r.Close() }, nil
}

// report prints the stats of every demo topic and their dead messages.
func report(ctx context.Context, p *printer, c *rmq.Client) error {
	var rows [][]string
	var dead []rmq.DeadMessage
	for _, t := range demoTopics {
		st, err := c.Stats(ctx, t.Name)
		if err != nil {
			return err
		}
		rows = append(rows, []string{t.Name, t.Type.String(), itoa(int64(t.SlotAmount)),
			itoa(st.Store), itoa(st.Retry), itoa(st.Prepare), itoa(st.Dead)})
		d, err := c.DeadMessages(ctx, t.Name, 0)
		if err != nil {
			return err
		}
		dead = append(dead, d...)
	}
	p.printf("\nstats (namespace %s):\n", c.Namespace())
	p.table([]string{"TOPIC", "TYPE", "SLOTS", "STORE", "RETRY", "PREPARE", "DEAD"}, rows)
	p.printf("\ndead messages:\n")
	printDead(p, dead)
	return nil
}

// cleanup deletes the topics of the demo namespace on a real Redis, with
// their messages: the dead one, and any left pending when the scenario did
// not complete. The namespace is the demo's own, fresh for this run.
func cleanup(p *printer, r redis.UniversalClient, ns string) error {
	c, err := rmq.New(r, rmq.WithNamespace(ns))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var dead, left int64
	for _, t := range demoTopics {
		st, err := c.Stats(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		dead, left = dead+st.Dead, left+st.Store+st.Retry+st.Prepare
		if err := c.DeleteTopic(ctx, t.Name, rmq.Force()); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
	}
	p.printf("\ncleanup: purged %s of namespace %s and deleted its %s\n",
		plural(dead, "dead message"), ns, plural(int64(len(demoTopics)), "topic"))
	if left > 0 {
		p.printf("cleanup: deleted %s of namespace %s left pending\n", plural(left, "message"), ns)
	}
	return nil
}
