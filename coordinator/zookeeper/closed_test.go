package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Close is final: every later call fails with ErrClosed and changes
// nothing, where the admin calls connected again and a Run joined.
func TestCloseIsFinal(t *testing.T) {
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns := fmt.Sprintf("closed-%d", time.Now().UnixNano())
	def := `{"slotAmount":2,"type":"Priority"}`
	require.NoError(t, z.RecordTopic(ctx, ns, "before", def))
	require.NoError(t, z.Close())
	require.NoError(t, z.Close(), "a second Close")

	assert.ErrorIs(t, z.RecordTopic(ctx, ns, "after", def), zookeeper.ErrClosed)
	assert.ErrorIs(t, z.RemoveTopic(ctx, ns, "before"), zookeeper.ErrClosed)
	_, err = z.Workers(ctx, ns)
	assert.ErrorIs(t, err, zookeeper.ErrClosed)
	_, _, err = z.Assignment(ctx, ns, "before")
	assert.ErrorIs(t, err, zookeeper.ErrClosed)
	m := coordinator.Member{Namespace: ns, DrainTimeout: time.Second,
		Topics: []coordinator.TopicThreads{{Topic: "before", SlotAmount: 2, Threads: 1}}}
	runCtx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	assert.ErrorIs(t, z.Run(runCtx, m, nopHandler{}), zookeeper.ErrClosed)

	// Nothing changed: "before" is still defined, "after" never was, and
	// no worker joined.
	conn, _, err := zk.Connect(testenv.ZooKeeper(t), 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	base := "/rmq-test/" + ns
	for path, want := range map[string]bool{base + "/topics/before": true, base + "/topics/after": false} {
		ok, _, err := conn.Exists(path)
		require.NoError(t, err)
		assert.Equal(t, want, ok, path)
	}
	workers, _, err := conn.Children(base + "/workers")
	if !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
	assert.Empty(t, workers, "workers joined after Close")
}

// nopHandler takes no part in a Run.
type nopHandler struct{}

func (nopHandler) Assigned(*coordinator.Lease) {}
func (nopHandler) Revoked(*coordinator.Lease)  {}
