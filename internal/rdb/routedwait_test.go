package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A Bounded routed pipeline with one master cut off from the process
// returns after MasterWait with the other masters' answers; the cut
// master's commands read as unanswered, and while its call is still out a
// second Exec sends it nothing and fails at once. Once the call ends (the
// client's read timeout, here 1.5 s) the master is tried again.
func TestBoundedPipelineLeavesACutMasterBehind(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	keys := oneKeyPerMaster(t, direct, ns)
	cutAddr := testenv.MasterOf(t, direct, keys[0])
	c, p := viaPartition(t, cutAddr, 1500*time.Millisecond)
	var gate masterGate

	exec := func() (gets []*redis.StringCmd, on []redis.Pipeliner, rp *RoutedPipeline, err error, took time.Duration) {
		rp = NewRoutedPipeline(c).Bounded(&gate)
		for _, k := range keys {
			pipe := rp.On(ctx, k)
			on = append(on, pipe)
			gets = append(gets, pipe.Get(ctx, k))
		}
		start := time.Now()
		err = rp.Exec(ctx)
		return gets, on, rp, err, time.Since(start)
	}
	gets, on, rp, err, _ := exec()
	require.NoError(t, err)
	assert.True(t, rp.Answered(on[0]))
	assert.Equal(t, keys[0], gets[0].Val())

	p.Cut()
	gets, on, rp, err, took := exec()
	assert.ErrorIs(t, err, ErrUnanswered)
	assert.GreaterOrEqual(t, took, MasterWait)
	assert.Less(t, took, MasterWait+500*time.Millisecond, "waited for the cut master")
	assert.False(t, rp.Answered(on[0]))
	for i := 1; i < 3; i++ {
		require.True(t, rp.Answered(on[i]))
		assert.Equal(t, keys[i], gets[i].Val(), "another master's answer")
	}
	assert.True(t, gate.busy(cutAddr))

	_, on, rp, err, took = exec()
	assert.ErrorIs(t, err, ErrUnanswered)
	assert.Less(t, took, 200*time.Millisecond, "a second call sent into the cut while the first is out")
	assert.False(t, rp.Answered(on[0]))

	// The call left running ends at the read timeout; the gate opens then.
	require.Eventually(t, func() bool { return !gate.busy(cutAddr) }, 5*time.Second, 10*time.Millisecond, "the call left running never ended")
	p.Heal()
	require.Eventually(t, func() bool {
		gets, on, rp, err, _ = exec()
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the healed master never answered")
	assert.True(t, rp.Answered(on[0]))
	assert.Equal(t, keys[0], gets[0].Val())
}
