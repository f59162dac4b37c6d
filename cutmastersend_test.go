package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// On a Cluster, a master cut off by a partition holds up only its own
// slots' Sends (README, Sending). Here 24 Sends of 1 MiB (the default
// limit) to the cut master fill its socket's buffers; the Cluster's one
// writer then blocks in that stream's write, and Sends to the other masters
// time out.
func TestClusterCutMasterHoldsOnlyItsOwnSends(t *testing.T) {
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	const slots = 16
	m, err := direct.MasterForKey(ctx, fmt.Sprintf("%s:{t:0}:store", ns))
	require.NoError(t, err)
	cutAddr := m.Options().Addr
	other := -1
	for i := range slots {
		m, err := direct.MasterForKey(ctx, fmt.Sprintf("%s:{t:%d}:store", ns, i))
		require.NoError(t, err)
		if m.Options().Addr != cutAddr {
			other = i
			break
		}
	}
	require.GreaterOrEqual(t, other, 0)
	part := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: part.Addr()})
	c := newClientIn(t, via, ns) // default max content: 1 MiB
	define(t, c, "t", slots, rmq.Priority)
	small := contentIn("small", other, slots)
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(small), Priority: 20}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(contentIn("warm", 0, slots)), Priority: 20}))

	part.Cut()
	defer part.Heal()
	const bigs = 24
	big := make(chan error, bigs)
	for i := range bigs {
		go func() {
			content := append([]byte(contentIn(fmt.Sprint("big", i), 0, slots)), make([]byte, 1<<20-64)...)
			// the slot is by basis: the content's prefix would not decide it
			basis := contentIn(fmt.Sprint("big", i), 0, slots)
			bctx, cancel := context.WithTimeout(ctx, 6*time.Second)
			defer cancel()
			big <- c.Producer().Send(bctx, rmq.PriorityMessage{Topic: "t", Content: content, Priority: 20, SlotBasis: basis})
		}()
	}
	time.Sleep(500 * time.Millisecond)
	var worst time.Duration
	for i := range 10 {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		start := time.Now()
		err := c.Producer().Send(sctx, rmq.PriorityMessage{Topic: "t", Content: []byte(contentIn(fmt.Sprint("other", i), other, slots)), Priority: 20})
		took := time.Since(start)
		cancel()
		worst = max(worst, took)
		assert.NoError(t, err, "Send %d to a master that is not cut off", i)
	}
	t.Logf("slowest Send to a master not cut off: %v", worst.Round(time.Millisecond))
	// Held behind the cut master, they timed out at their 2 s ctx; alone
	// they take milliseconds (0.1 s at most), and the bound leaves room for a
	// loaded machine: 0.66 s once under -race beside the build's vet.
	assert.Less(t, worst, 1500*time.Millisecond)
	part.Heal()
	for range bigs {
		<-big
	}
}
