package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A script the masters lack (as after a restart or failover) is loaded
// only where it was missing, through the same bounded pipelines: with one
// master cut off from the process, the other masters' calls are answered
// after MasterWait and the cut master's read as unanswered. A reload
// through the Cluster client would wait for the cut master too and fail
// every call that asked for it.
func TestScriptReloadLeavesACutMasterBehind(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	keys := oneKeyPerMaster(t, direct, ns)
	// A script of this test's own, so that no master has it yet.
	script := redis.NewScript(fmt.Sprintf("-- %s\nreturn redis.call('GET', KEYS[1])", ns))
	cutAddr := testenv.MasterOf(t, direct, keys[0])
	c, p := viaPartition(t, cutAddr, 1500*time.Millisecond)
	var gate masterGate
	run := func() ([]any, []error, time.Duration) {
		start := time.Now()
		out, errs := runEachApart(ctx, c, &gate, script, len(keys), func(i int) ([]string, []any) {
			return []string{keys[i]}, nil
		})
		return out, errs, time.Since(start)
	}

	p.Cut()
	out, errs, took := run()
	t.Logf("answered in %v", took)
	assert.ErrorIs(t, errs[0], ErrUnanswered)
	for i := 1; i < 3; i++ {
		require.NoError(t, errs[i], "a call on a master in reach")
		assert.Equal(t, keys[i], out[i])
	}
	assert.Less(t, took, MasterWait+700*time.Millisecond, "the reload waited for the cut master")
	for i := 1; i < 3; i++ {
		node, err := direct.MasterForKey(ctx, keys[i])
		require.NoError(t, err)
		loaded, err := script.Exists(ctx, node).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, loaded, "the script loaded on the master that lacked it")
	}

	// Once the call left running ends and the cut heals, the last master
	// is sent the script too.
	require.Eventually(t, func() bool { return !gate.busy(cutAddr) }, 5*time.Second, 10*time.Millisecond, "the call left running never ended")
	p.Heal()
	require.Eventually(t, func() bool {
		out, errs, _ = run()
		return errs[0] == nil
	}, 10*time.Second, 50*time.Millisecond, "the healed master never answered")
	assert.Equal(t, keys[0], out[0])
}
