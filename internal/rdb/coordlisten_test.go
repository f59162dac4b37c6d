package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// The coordinator's channel is followed through two masters of a Cluster:
// once the master that go-redis would subscribe it through (the one of the
// channel's hash slot) is cut off from the process, announcements still
// arrive.
func TestCoordinationListensPastACutMaster(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	keys := NewKeyspace(testenv.Namespace(t, b))
	cutAddr := testenv.MasterOf(t, direct, keys.CoordChannel())
	p := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()})

	got := make(chan string, 64)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewCoordination(via.Redis, keys).Listen(lctx, func(m any) {
			switch m := m.(type) {
			case *redis.Subscription:
				got <- "subscribed"
			case *redis.Message:
				got <- m.Payload
			}
		})
	}()
	defer func() {
		stop()
		<-done
	}()
	deadline := time.After(10 * time.Second)
	for published := false; ; {
		select {
		case m := <-got:
			if m == "epoch" {
				return
			}
			if m == "subscribed" && !published {
				time.Sleep(100 * time.Millisecond) // every subscription made
				p.Cut()
				require.NoError(t, direct.Publish(ctx, keys.CoordChannel(), "epoch").Err())
				published = true
			}
		case <-deadline:
			t.Fatalf("no announcement within 10 s with %s cut off", cutAddr)
		}
	}
}
