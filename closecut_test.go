package rmq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A graceful Close with no deadline, while the namespace's Cluster master
// (the coordinator's keys, the metrics) is cut off from the process, waits
// for about one unanswered call: the reconcile under way is cut short, the
// leave tries that master once, the calls of the flow controls, the idle
// sweeps and the periodic metrics flush under way end while the slots are
// handed back, and neither the presence entry's removal nor the last metrics
// flush is tried after Redis left the call before unanswered. With go-redis's
// retries (here 3, each waiting out a 1 s read or dial) each call took
// several seconds (31 s in all); with each call tried once, one after the
// other, 7-9 s; now about 3 s.
func TestGracefulCloseTriesACutCoordinatorMasterOnce(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	home := testenv.MasterOf(t, direct, "{"+ns+"}")
	p := testenv.StartPartition(t, home)
	via := testenv.ClusterVia(t, map[string]string{home: p.Addr()}, func(o *redis.ClusterOptions) {
		o.ReadTimeout, o.DialTimeout, o.MaxRetries = time.Second, time.Second, 3
	})
	c, err := rmq.New(via.Redis, rmq.WithNamespace(ns), rmq.WithLogger(debugLogger()))
	require.NoError(t, err)
	define(t, c, "t", 16, rmq.Priority)
	var got atomic.Int64
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		got.Add(1)
		return nil
	})))
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	for i := range 100 {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(fmt.Sprint(i)), Priority: 50}))
	}
	eventually(t, 10*time.Second, "every message consumed", func() bool { return got.Load() >= 100 })

	p.Cut()
	time.Sleep(4 * time.Second) // the slots on the cut master declined
	begin := time.Now()
	require.NoError(t, c.Close(ctx))
	took := time.Since(begin)
	t.Logf("Close took %v", took)
	assert.Less(t, took, 6*time.Second, "Close waited for calls to the cut master one after the other")
	require.NoError(t, <-started)
}
