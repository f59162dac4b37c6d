package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A DefineTopic that ZooKeeper refuses (it holds another definition) leaves
// Redis as it found it: a definition the call wrote there goes again, one
// that was there before stays.
func TestZooKeeperConflictLeavesRedisAsItWas(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	for _, name := range []string{"fresh", "known"} {
		require.NoError(t, z.RecordTopic(ctx, ns, name, `{"slotAmount":16,"type":"Priority"}`))
	}
	plain, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer plain.Close(ctx)
	define(t, plain, "known", 8, rmq.Priority) // Redis alone knows it so

	c := zkClient(t, b, ns, "w")
	for _, name := range []string{"fresh", "known"} {
		err = c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 8, Type: rmq.Priority})
		require.ErrorIs(t, err, rmq.ErrTopicConflict, name)
	}

	topics, err := plain.Topics(ctx)
	require.NoError(t, err)
	names := map[string]int{}
	for _, tp := range topics {
		names[tp.Name] = tp.SlotAmount
	}
	assert.Equal(t, map[string]int{"known": 8}, names,
		"the refused definition of \"fresh\" stayed in Redis, or the one there before went")
	require.NoError(t, plain.DefineTopic(ctx, rmq.Topic{Name: "fresh", SlotAmount: 16, Type: rmq.Priority}),
		"ZooKeeper's definition cannot be made in Redis")
}
