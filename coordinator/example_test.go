package coordinator_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
)

// Many processes share the slots of a topic through ZooKeeper; each slot is
// consumed by one thread of one process at a time.
func ExampleNewZooKeeper() {
	coord, err := coordinator.NewZooKeeper(coordinator.ZooKeeperConfig{
		Servers:        []string{"127.0.0.1:2181"},
		SessionTimeout: 4 * time.Second,
		Root:           "/rmq",
		Logger:         slog.Default(),
	})
	if err != nil {
		panic(err)
	}
	defer coord.Close()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	c, err := rmq.New(rdb, rmq.WithNamespace("shop"), rmq.WithCoordinator(coord))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "ledger", SlotAmount: 64, Type: rmq.FixedTime}); err != nil {
		panic(err)
	}
	_ = c.Subscribe("ledger", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		if !rmq.Owned(ctx) { // another worker may own the slot by now
			return rmq.ErrNotOwner
		}
		return apply(m.Content)
	}), rmq.WithThreads(4))
	_ = c.Start(ctx) // until ctx ends or c.Close
}

func apply([]byte) error { return nil }

// Assign is pure: every worker computing it from the same inputs agrees.
func ExampleAssign() {
	prev := coordinator.Assign(8, []coordinator.WorkerThreads{{Worker: "a", Threads: 1}}, nil)
	next := coordinator.Assign(8, []coordinator.WorkerThreads{{Worker: "a", Threads: 1}, {Worker: "b", Threads: 1}}, prev)
	for slot, o := range next {
		if o != prev[slot] {
			fmt.Println("slot", slot, "moves to", o.Worker)
		}
	}
	// Output:
	// slot 4 moves to b
	// slot 5 moves to b
	// slot 6 moves to b
	// slot 7 moves to b
}
