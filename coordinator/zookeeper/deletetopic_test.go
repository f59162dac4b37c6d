package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// DeleteTopic with the ZooKeeper coordinator removes the topic's ZooKeeper
// records too (definition, assignment, owners) once no process consumes it,
// and leaves the other topics' records alone.
func TestDeleteTopicRemovesTheZooKeeperRecords(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	worker := zkClient(t, b, ns, "deleter-worker")
	define(t, worker, "gone", 4, rmq.Priority)
	define(t, worker, "kept", 2, rmq.Priority)
	require.NoError(t, worker.Subscribe("gone", newRecorder(), rmq.WithThreads(2)))
	require.NoError(t, worker.Subscribe("kept", newRecorder()))
	done := make(chan error, 1)
	go func() { done <- worker.Start(ctx) }()

	conn, _, err := zk.Connect(testenv.ZooKeeper(t), 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	base := "/rmq-test/" + ns
	nodes := map[string]string{ // the records the README's node layout names
		"definition": base + "/topics/gone",
		"assignment": base + "/assignment/gone",
		"owners":     base + "/owners/gone",
	}
	exists := func(path string) bool {
		ok, _, err := conn.Exists(path)
		require.NoError(t, err)
		return ok
	}
	waitFor(t, 15*time.Second, "the worker holds every slot of the topic", func() bool {
		owners, _, err := conn.Children(nodes["owners"])
		return err == nil && len(owners) == 4 && exists(nodes["assignment"])
	})
	for what, path := range nodes {
		require.True(t, exists(path), "%s %s recorded", what, path)
	}

	admin := zkClient(t, b, ns, "deleter-admin")
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	assert.ErrorIs(t, admin.DeleteTopic(ctx, "gone"), rmq.ErrTopicInUse)
	assert.True(t, exists(nodes["definition"]), "a refused delete leaves the records")

	closeCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, worker.Close(closeCtx))
	require.NoError(t, <-done)
	waitFor(t, 10*time.Second, "the worker's session and presence are gone", func() bool {
		ws, err := admin.Workers(ctx)
		return err == nil && len(ws) == 0
	})

	require.NoError(t, admin.DeleteTopic(ctx, "gone"))
	for what, path := range nodes {
		assert.False(t, exists(path), "%s %s removed", what, path)
	}
	assert.True(t, exists(base+"/topics/kept"), "another topic keeps its records")
	_, err = admin.Stats(ctx, "gone")
	assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
	define(t, admin, "gone", 8, rmq.FixedTime) // defined afresh, the old ZooKeeper definition is no conflict
}
