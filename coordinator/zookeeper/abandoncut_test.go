package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// An abandoned Run loses every lease at once and returns promptly
// (Member.Abandoned) while its link to ZooKeeper has just been cut, the
// ensemble fine and go-zookeeper not yet aware: the calls in flight are cut
// short. (The leases stayed valid, and Run returned 6-7 s later, at
// go-zookeeper's receive timeout.)
func TestAbandonedRunReturnsPromptlyWhileCutOff(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	p := testenv.StartPartition(t, servers[0])
	ns := fmt.Sprintf("abandon-%d", time.Now().UnixNano())
	abandoned := make(chan struct{})
	m := coordinator.Member{Namespace: ns, DrainTimeout: time.Minute, Abandoned: abandoned, Topics: []coordinator.TopicThreads{
		{Topic: "t", SlotAmount: 4, Threads: 1, Definition: `{"slotAmount":4,"type":"Priority"}`}}}
	z, err := zookeeper.New(zookeeper.Config{Servers: []string{p.Addr()}, SessionTimeout: 10 * time.Second,
		Root: "/rmq-test", WorkerID: "abandon"})
	require.NoError(t, err)
	h := &stubborn{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- z.Run(ctx, m, h) }()
	waitFor(t, 10*time.Second, "all 4 slots held", func() bool { _, n := h.leases(); return n == 4 })

	p.Cut()
	time.Sleep(500 * time.Millisecond) // the loop's next look is under way, unanswered
	start := time.Now()
	cancel()
	close(abandoned)
	time.Sleep(200 * time.Millisecond)
	_, validAfter := h.leases()
	assert.Zero(t, validAfter, "leases still valid 200ms after Abandoned closed (\"loses every lease at once\")")
	select {
	case err := <-done:
		require.NoError(t, err)
		took := time.Since(start)
		t.Logf("Run returned %v after the abandon", took.Round(time.Millisecond))
		assert.Less(t, took, 2*time.Second, "Run returned %v after Abandoned closed", took.Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20 s of the abandon")
	}
}

// rmq's Shutdown whose ctx ends returns within its documented bound (once
// the consumers are gone, up to 1 s to leave and 1 s for the presence
// entry) under the ZooKeeper coordinator with its link to ZooKeeper just
// cut. (It waited for go-zookeeper's receive timeout: 6.1 s after a 300 ms
// ctx.)
func TestShutdownWithExpiredCtxIsBoundedWhileZooKeeperIsCutOff(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	p := testenv.StartPartition(t, testenv.ZooKeeper(t)[0])
	z, err := zookeeper.New(zookeeper.Config{Servers: []string{p.Addr()}, SessionTimeout: 10 * time.Second,
		Root: "/rmq-test", WorkerID: "shutdown-cut"})
	require.NoError(t, err)
	defer z.Close()
	ctx := context.Background()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(z))
	require.NoError(t, err)
	define(t, c, "t", 4, rmq.Priority)
	require.NoError(t, c.Subscribe("t", newRecorder()))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	admin, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), Root: "/rmq-test"})
	require.NoError(t, err)
	defer admin.Close()
	waitFor(t, 15*time.Second, "the worker holds its 4 slots", func() bool {
		_, slots, err := admin.Assignment(ctx, ns, "t")
		if err != nil || len(slots) != 4 {
			return false
		}
		for _, s := range slots {
			if s.Holder.Worker != "shutdown-cut" {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond)

	p.Cut()
	time.Sleep(500 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, c.Shutdown(short), context.DeadlineExceeded)
	took := time.Since(start)
	t.Logf("Shutdown with a 300ms ctx returned after %v", took.Round(time.Millisecond))
	assert.Less(t, took, 3*time.Second, "Shutdown with a 300ms ctx took %v", took.Round(time.Millisecond))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return")
	}
	closeCtx, cancelClose := context.WithTimeout(ctx, 10*time.Second)
	defer cancelClose()
	_ = c.Close(closeCtx)
}
