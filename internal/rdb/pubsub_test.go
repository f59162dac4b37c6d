package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestListenSurvivesADeadMaster: on a Cluster, a Listen keeps receiving
// publications while the master of its channel's hash slot is dead (before
// any failover), since it also listens through another master.
func TestListenSurvivesADeadMaster(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	cl := testenv.StartCluster(t, testenv.ClusterOptions{NodeTimeout: 30 * time.Second, PartialCoverage: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	defer client.Close()
	br := New(client, NewKeyspace("listen"), WithLogger(discard)).(*redisBroker)
	defer br.Close(ctx)

	const channel = "listen:wake:t"
	victim, err := cl.MasterOf(ctx, testenv.KeySlot(channel))
	require.NoError(t, err)
	got := make(chan string, 64)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		br.Listen(lctx, []string{channel}, nil, func(msg any) {
			if m, ok := msg.(*redis.Message); ok {
				got <- m.Payload
			}
		})
	}()
	defer func() { stop(); <-done }()

	// Publish through a node other than the victim until one arrives.
	var publisher string
	for _, a := range cl.Addrs() {
		if a != victim {
			publisher = a
			break
		}
	}
	pc := redis.NewClient(&redis.Options{Addr: publisher})
	defer pc.Close()
	await := func(payload string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			require.NoError(t, pc.Publish(ctx, channel, payload).Err())
			select {
			case p := <-got:
				if p == payload {
					return
				}
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%q not received", payload)
			}
		}
	}
	await("before")
	cl.Kill(t, victim) // no failover for 30 s: the channel's master stays dead
	await("after")
}
