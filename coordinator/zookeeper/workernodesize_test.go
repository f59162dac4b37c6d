package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A member whose owner nodes could not all be held by one ZooKeeper session
// (a topic of 65,536 slots; 25,000 topics) is refused by Run with
// ErrInvalidConfig before it writes anything. (A worker that held 65,536
// owner nodes broke the ensemble when its session ended: ZooKeeper logs the
// end with every ephemeral path in one transaction, 2.1 MB here, which its
// followers could not read back, "Unreasonable length", and the ensemble
// lost its quorum.)
func TestMemberTooLargeForASessionIsInvalidConfig(t *testing.T) {
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	many := make([]coordinator.TopicThreads, 25000)
	for i := range many {
		many[i] = coordinator.TopicThreads{Topic: fmt.Sprintf("topic-with-a-rather-long-name-%05d", i), SlotAmount: 1, Threads: 1}
	}
	for name, topics := range map[string][]coordinator.TopicThreads{
		"65,536 slots":  {{Topic: "big", SlotAmount: 65536, Threads: 4}},
		"25,000 topics": many,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		err := z.Run(ctx, coordinator.Member{Namespace: fmt.Sprintf("huge-%d", time.Now().UnixNano()), DrainTimeout: time.Second, Topics: topics}, nopHandler{})
		cancel()
		assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig, name)
		assert.Less(t, time.Since(start), time.Second, "%s: Run returned after %v", name, time.Since(start))
	}
	// 8,192 slots fit (16,384 with a short root and namespace).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = z.Run(ctx, coordinator.Member{Namespace: fmt.Sprintf("fits-%d", time.Now().UnixNano()), DrainTimeout: time.Second,
		Topics: []coordinator.TopicThreads{{Topic: "t", SlotAmount: 8192, Threads: 1}}}, nopHandler{})
	assert.NoError(t, err, "a member of 8,192 slots")
}
