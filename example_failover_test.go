package rmq_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
)

// A Send that must survive its master's death: it returns once a replica
// has the message, or says that it may be lost. (Not run: it needs a Redis
// with a replica, such as a Cluster or a Sentinel-watched master.)
func ExampleWithReplicaAck() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}})
	defer rdb.Close()
	c, err := rmq.New(rdb, rmq.WithNamespace("shop"), rmq.WithReplicaAck(1, 500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "order-close", SlotAmount: 16, Type: rmq.FixedTime}); err != nil {
		log.Fatal(err)
	}
	msg := rmq.FixedTimeMessage{Topic: "order-close", Content: []byte("order:9"), FixedTime: time.Now().Add(30 * time.Minute)}
	for attempt := 1; ; attempt++ {
		err := c.Producer().Send(ctx, msg)
		if err == nil {
			break // on the master and on a replica
		}
		if !errors.Is(err, rmq.ErrNotReplicated) || attempt == 3 {
			log.Fatal(err)
		}
		// Stored on the master, not yet on a replica: sending again is safe
		// (the same content merges) and waits once more.
	}
}
