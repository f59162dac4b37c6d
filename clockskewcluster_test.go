package rmq_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Each slot's wake-ups are timed by its own master's clock: in a Cluster of
// two masters, A (its clock 10 s ahead) holding the topic's slot and B (in
// step) holding the namespace's keys, whose clock the presence renewals
// read, a FixedTime message woken on A's slot comes at its due time by A's
// clock (it came 10 s late: the client's one skew, B's, timed it).
func TestWakeUpsFollowEachMastersClock(t *testing.T) {
	t.Parallel() // mostly waiting, on servers of its own
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000", "--appendonly", "no", "--cluster-announce-ip", "127.0.0.1"}
	a := testenv.StartRedisClockAhead(t, 10*time.Second, args...)
	b := testenv.StartRedis(t, args...)
	ctx := context.Background()
	ca := redis.NewClient(&redis.Options{Addr: a.Addr()})
	cb := redis.NewClient(&redis.Options{Addr: b.Addr()})
	defer ca.Close()
	defer cb.Close()
	require.NoError(t, ca.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 8191).Err())
	require.NoError(t, cb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 8192, 16383).Err())
	_, bport := splitPort(t, b.Addr())
	require.NoError(t, ca.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", bport).Err())
	require.Eventually(t, func() bool {
		for _, c := range []*redis.Client{ca, cb} {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond)
	at, err := ca.Time(ctx).Result()
	require.NoError(t, err)
	require.InDelta(t, 10, time.Until(at).Seconds(), 1, "A's clock runs 10 s ahead")
	bt, err := cb.Time(ctx).Result()
	require.NoError(t, err)
	require.InDelta(t, 0, time.Until(bt).Seconds(), 1, "B's clock is in step")

	// A namespace whose coordination keys live on B, a topic whose slot lives on A.
	var ns, topic string
	for i := 0; ns == ""; i++ {
		if n := "skewns" + strconv.Itoa(i); testenv.KeySlot(n+":{"+n+"}:presence") >= 8192 {
			ns = n
		}
	}
	for i := 0; topic == ""; i++ {
		if tp := "ft" + strconv.Itoa(i); testenv.KeySlot(ns+":{"+tp+":0}:store") < 8192 {
			topic = tp
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr(), b.Addr()}})
	defer cc.Close()
	c, err := rmq.New(cc, rmq.WithNamespace(ns), rmq.WithCoordinator(coordinator.NewLocal()),
		rmq.WithIdleSweep(time.Minute))
	require.NoError(t, err)
	define(t, c, topic, 1, rmq.FixedTime)
	rec := newRecorder()
	require.NoError(t, c.Subscribe(topic, rec))
	run(t, c)
	require.Eventually(t, func() bool {
		m := c.TopicMetrics()
		return len(m) == 1 && m[0].OwnedSlots == 1
	}, 20*time.Second, 10*time.Millisecond)
	time.Sleep(2500 * time.Millisecond) // the slot parks; presence renewals (on B) keep noting the clock

	rt, err := ca.Time(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: topic, Content: []byte("x"),
		FixedTime: rt.Add(1500 * time.Millisecond)}))
	m := rec.waitCalls(t, 1, 40*time.Second)[0].msg
	late := m.Delivered.Sub(m.Due) // both by A's clock
	t.Logf("due in 1.5 s by A's clock: delivered %v after its due time", late.Round(time.Millisecond))
	assert.GreaterOrEqual(t, late, time.Duration(0), "delivered before its due time")
	assert.Less(t, late, 1000*time.Millisecond, "the wake-up's timer used another master's skew")
}

func splitPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			require.NoError(t, err)
			return addr[:i], p
		}
	}
	t.Fatalf("no port in %q", addr)
	return "", 0
}
