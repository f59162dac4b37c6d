package main

import (
	"context"
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
)

// setupWorkers defines "rmq workers": the processes consuming a namespace,
// from the Redis coordinator and the presence entries (or, with -zk, from
// ZooKeeper).
func setupWorkers(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	zf := addZKFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if err := zf.check(fs); err != nil {
			return err
		}
		if zf.servers != "" {
			return zkWorkers(ctx, e, zf, af.namespace)
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		ws, err := c.Workers(ctx)
		if err != nil {
			return err
		}
		if len(ws) == 0 {
			e.out.printf("no process consumes namespace %q\n", c.Namespace())
			return nil
		}
		e.out.printf("namespace %q: coordinator %s, %d workers\n", c.Namespace(), coordinatorKinds(ws), len(ws))
		rows := make([][]string, len(ws))
		now := time.Now()
		for i, w := range ws {
			var flags []string
			if w.Leader {
				flags = append(flags, "leader")
			}
			if w.Leaving {
				flags = append(flags, "leaving")
			}
			flags = append(flags, declineFlags(w.Declined)...)
			beat := "-"
			if !w.LastHeartbeat.IsZero() {
				beat = now.Sub(w.LastHeartbeat).Round(10*time.Millisecond).String() + " ago"
			}
			rows[i] = []string{w.ID, w.Coordinator, w.Host, itoa(int64(w.PID)), topicThreads(w.Topics),
				topicThreads(w.OwnedSlots), beat, strings.Join(flags, ",")}
		}
		e.out.table([]string{"WORKER", "COORDINATOR", "HOST", "PID", "TOPICS (THREADS)", "OWNED SLOTS", "HEARTBEAT", "ROLE"}, rows)
		if strings.Contains(coordinatorKinds(ws), "zookeeper") {
			e.out.printf("\nworkers of the ZooKeeper coordinator: rmq workers -zk HOST:PORT for their slots\n")
		}
		return nil
	}
}

// coordinatorKinds names the coordinators the workers use, e.g. "redis".
func coordinatorKinds(ws []rmq.Worker) string {
	var kinds []string
	for _, w := range ws {
		if !slices.Contains(kinds, w.Coordinator) {
			kinds = append(kinds, w.Coordinator)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, " and ")
}

// setupAssignment defines "rmq assignment TOPIC": which worker thread owns
// each slot, under the Redis coordinator (or, with -zk, ZooKeeper's).
func setupAssignment(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	zf := addZKFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, false)
		if err != nil {
			return err
		}
		if err := zf.check(fs); err != nil {
			return err
		}
		if zf.servers != "" {
			return zkAssignment(ctx, e, zf, af.namespace, topic)
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		slots, err := c.Owners(ctx, topic)
		if err != nil {
			return err
		}
		rows := make([][]string, len(slots))
		moving, assigned := 0, 0
		for i, s := range slots {
			state := "held"
			switch {
			case s.Holder == "":
				state = "free"
			case s.Holder != s.Worker:
				state = "handing over"
			}
			if s.Worker != "" {
				assigned++
			}
			if s.Holder != s.Worker {
				moving++
			}
			rows[i] = []string{itoa(int64(s.Slot)), owner(coordinator.Owner{Worker: s.Worker, Thread: s.Thread}),
				orDash(s.Holder), tokenText(s.Token), state}
		}
		if assigned == 0 {
			e.out.printf("no assignment for topic %q in namespace %q (no worker of the Redis coordinator subscribed yet)\n",
				topic, c.Namespace())
			return nil
		}
		e.out.printf("topic %q (coordinator redis), %d slots, %d not yet with their assigned worker\n", topic, len(slots), moving)
		e.out.table([]string{"SLOT", "ASSIGNED", "HELD BY", "TOKEN", "STATE"}, rows)
		return nil
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
