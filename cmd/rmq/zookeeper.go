package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
)

// zkFlags are the flags that read the ZooKeeper coordinator instead of the
// Redis one.
type zkFlags struct {
	servers  string
	root     string
	user     string
	password string
}

// addZKFlags defines -zk, -zk-root, -zk-user and -zk-password on fs.
func addZKFlags(fs *flag.FlagSet) *zkFlags {
	f := &zkFlags{}
	fs.StringVar(&f.servers, "zk", "", "read the ZooKeeper coordinator of the ensemble at `HOST:PORT[,…]` (default: the Redis coordinator)")
	fs.StringVar(&f.root, "zk-root", "/rmq", "the ZooKeeper coordinator's root `PATH`")
	fs.StringVar(&f.user, "zk-user", "", "ZooKeeper digest auth `USER` (with -zk-password)")
	fs.StringVar(&f.password, "zk-password", "", "ZooKeeper digest auth `PASSWORD`")
	return f
}

// check refuses -zk-root, -zk-user or -zk-password without -zk: they would
// be ignored, and the Redis coordinator read instead.
func (f *zkFlags) check(fs *flag.FlagSet) error {
	var set string
	fs.Visit(func(fl *flag.Flag) {
		if set == "" && strings.HasPrefix(fl.Name, "zk-") {
			set = fl.Name
		}
	})
	if set != "" && f.servers == "" {
		return usagef("-%s needs -zk (the ZooKeeper ensemble to read)", set)
	}
	return nil
}

// connect returns the coordinator for admin reads of namespace; the caller
// closes it.
func (f *zkFlags) connect(namespace string) (*zookeeper.Coordinator, error) {
	if err := checkNamespace(namespace); err != nil {
		return nil, err
	}
	cfg := zookeeper.Config{Root: f.root, SessionTimeout: 10 * time.Second}
	for s := range strings.SplitSeq(f.servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	if f.user != "" {
		cfg.Auth = &zookeeper.DigestAuth{User: f.user, Password: f.password}
	}
	z, err := zookeeper.New(cfg)
	if err != nil {
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), "rmq: "))
	}
	return z, nil
}

// zkContext bounds an admin read, so a ZooKeeper that is down fails the
// command instead of hanging it.
func zkContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 15*time.Second)
}

// unanswered names the ensemble in err when ZooKeeper did not answer in
// time (the error is the context's alone), as the Redis check names Redis.
func (f *zkFlags) unanswered(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("zookeeper %s: %w", f.servers, err)
	}
	return err
}

// zkWorkers prints the live workers of namespace in ZooKeeper.
func zkWorkers(ctx context.Context, e *env, zf *zkFlags, namespace string) error {
	z, err := zf.connect(namespace)
	if err != nil {
		return err
	}
	defer z.Close()
	ctx, cancel := zkContext(ctx)
	defer cancel()
	ws, err := z.Workers(ctx, namespace)
	if err != nil {
		return zf.unanswered(err)
	}
	if len(ws) == 0 {
		e.out.printf("no live workers of the ZooKeeper coordinator in namespace %q\n", namespace)
		return nil
	}
	rows := make([][]string, len(ws))
	for i, w := range ws {
		var flags []string
		if w.Leader {
			flags = append(flags, "leader")
		}
		flags = append(flags, declineFlags(w.Declined)...)
		rows[i] = []string{w.ID, w.Host, itoa(int64(w.PID)), topicThreads(w.Topics), formatTime(w.Started), strings.Join(flags, ",")}
	}
	e.out.printf("namespace %q: coordinator zookeeper, %d workers\n", namespace, len(ws))
	e.out.table([]string{"WORKER", "HOST", "PID", "TOPICS (THREADS)", "STARTED", "ROLE"}, rows)
	return nil
}

// declineFlags formats a worker's declines as "declines topic:N" flags,
// sorted by topic: N slots of the topic whose Cluster master it cannot reach.
func declineFlags(declined map[string][]int) []string {
	var out []string
	for _, topic := range slices.Sorted(maps.Keys(declined)) {
		out = append(out, "declines "+topic+":"+itoa(int64(len(declined[topic]))))
	}
	return out
}

// topicThreads formats "topic(threads)" pairs, sorted by topic.
func topicThreads(m map[string]int) string {
	names := make([]string, 0, len(m))
	for t := range m {
		names = append(names, t)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, t := range names {
		parts[i] = fmt.Sprintf("%s(%d)", t, m[t])
	}
	return strings.Join(parts, " ")
}

// zkAssignment prints which worker thread owns each slot of topic in ZooKeeper.
func zkAssignment(ctx context.Context, e *env, zf *zkFlags, namespace, topic string) error {
	z, err := zf.connect(namespace)
	if err != nil {
		return err
	}
	defer z.Close()
	ctx, cancel := zkContext(ctx)
	defer cancel()
	gen, slots, err := z.Assignment(ctx, namespace, topic)
	if err != nil {
		return zf.unanswered(err)
	}
	if len(slots) == 0 {
		e.out.printf("no assignment for topic %q in namespace %q (no worker subscribed yet)\n", topic, namespace)
		return nil
	}
	rows := make([][]string, len(slots))
	moving := 0
	for i, s := range slots {
		state := "held"
		switch {
		case s.Holder.Worker == "":
			state = "free"
		case s.Holder != s.Assigned:
			state = "handing over"
		}
		if s.Holder != s.Assigned {
			moving++
		}
		rows[i] = []string{itoa(int64(s.Slot)), owner(s.Assigned), owner(s.Holder), tokenText(s.Token), state}
	}
	e.out.printf("topic %q (coordinator zookeeper), assignment generation %d, %d slots, %d not yet with their assigned thread\n",
		topic, gen, len(slots), moving)
	e.out.table([]string{"SLOT", "ASSIGNED", "HELD BY", "TOKEN", "STATE"}, rows)
	return nil
}

// owner formats "worker#thread", or "-" for nobody.
func owner(o coordinator.Owner) string {
	if o.Worker == "" {
		return "-"
	}
	return fmt.Sprintf("%s#%d", o.Worker, o.Thread)
}

func tokenText(t int64) string {
	if t == 0 {
		return "-"
	}
	return fmt.Sprintf("%#x", t)
}
