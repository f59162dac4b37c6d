package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A process that crashed (here: cut off from Redis) stops counting as a
// consumer of its topics once its presence expires (3 s), so DeleteTopic
// may delete a topic it consumed; its Redis coordinator membership outlives
// it up to the lease TTL (10 s). In that window Workers, which counts owned
// slots of every topic the members name, leaves the deleted topic out and
// lists the namespace's processes (it failed with ErrUnknownTopic).
func TestWorkersAfterACrashedConsumersTopicIsDeleted(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	admin := newClientIn(t, b, ns)
	define(t, admin, "gone", 2, rmq.Priority)
	define(t, admin, "kept", 2, rmq.Priority)

	p := testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
	r1 := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: time.Second, DialTimeout: time.Second})
	t.Cleanup(func() { r1.Close() })
	c1, err := rmq.New(r1, rmq.WithNamespace(ns))
	require.NoError(t, err)
	require.NoError(t, c1.Subscribe("gone", newRecorder()))
	require.NoError(t, c1.Subscribe("kept", newRecorder()))
	done := make(chan error, 1)
	go func() { done <- c1.Start(ctx) }()
	t.Cleanup(func() {
		p.Heal()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = c1.Close(cctx)
		<-done
	})
	eventually(t, 10*time.Second, "the worker holds every slot", func() bool {
		ws, err := admin.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].OwnedSlots["gone"] == 2 && ws[0].OwnedSlots["kept"] == 2
	})

	p.Cut() // the worker is gone, as far as Redis can tell
	cut := time.Now()
	eventually(t, 8*time.Second, "DeleteTopic once the crashed worker's presence expired", func() bool {
		return admin.DeleteTopic(ctx, "gone") == nil
	})
	t.Logf("deleted %v after the cut", time.Since(cut).Round(time.Millisecond))
	require.Less(t, time.Since(cut), 8*time.Second, "within the membership's lease: the window this test is about")

	ws, err := admin.Workers(ctx)
	require.NoError(t, err, "Workers fails while a crashed member names a deleted topic")
	assert.Len(t, ws, 1, "the crashed member is listed until its membership expires")
}
