package zookeeper_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
)

// Many processes share the slots of a topic through ZooKeeper; each slot is
// consumed by one thread of one process at a time.
func ExampleNew() {
	coord, err := zookeeper.New(zookeeper.Config{
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

// With Auth, the session authenticates with a digest identity and every node
// the coordinator creates is readable and writable by that identity only.
func ExampleNew_digestAuth() {
	coord, err := zookeeper.New(zookeeper.Config{
		Servers:        []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		SessionTimeout: 4 * time.Second,
		Root:           "/rmq",
		Auth:           &zookeeper.DigestAuth{User: "rmq", Password: "s3cret"},
	})
	if err != nil {
		panic(err)
	}
	defer coord.Close()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	c, err := rmq.New(rdb, rmq.WithCoordinator(coord))
	if err != nil {
		panic(err)
	}
	_ = c.Start(context.Background())
}

// The admin reads show who holds each slot; cmd/rmq's "workers" and
// "assignment" print them.
func ExampleCoordinator_Assignment() {
	coord, err := zookeeper.New(zookeeper.Config{Servers: []string{"127.0.0.1:2181"}, Root: "/rmq"})
	if err != nil {
		panic(err)
	}
	defer coord.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, slots, err := coord.Assignment(ctx, "shop", "ledger")
	if err != nil {
		panic(err)
	}
	for _, s := range slots {
		if s.Holder != s.Assigned {
			fmt.Printf("slot %d: moving from %q to %q\n", s.Slot, s.Holder.Worker, s.Assigned.Worker)
		}
	}
}
