package rmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker whose link to one Cluster master drops for a little over the
// time that declines it (3 s) and comes back for a moment, over and over,
// declines that master's slots twice: it takes the master back at its first
// answer after the first drop, as after any single outage, and after the
// second only once the link has held for 5 s. Before, each answer took the
// master back and each drop declined it again, every change moving its
// slots (a handover each, with more than one worker). Here the link drops
// three times for 5 s, 2 s apart: a master is declined 3 to 4 s after its
// last answer (a probe every second).
func TestClusterWorkerHoldsAFlappingMasterDeclined(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ns := testenv.Namespace(t, b)
	home := testenv.MasterOf(t, direct, "{"+ns+"}")
	const slots = 32
	var flapping string // a master of some slot of "t", not the coordinator's
	for i := range slots {
		if m := testenv.MasterOf(t, direct, fmt.Sprintf("%s:{t:%d}:store", ns, i)); m != home {
			flapping = m
			break
		}
	}
	require.NotEmpty(t, flapping, "every slot on the coordinator's master")
	p := testenv.StartPartition(t, flapping)
	via := testenv.ClusterVia(t, map[string]string{flapping: p.Addr()})
	warned := &testenv.Warnings{}
	c, err := rmq.New(via.Redis, rmq.WithNamespace(ns), rmq.WithLogger(slog.New(warned)))
	require.NoError(t, err)
	define(t, c, "t", slots, rmq.Priority)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })))
	run(t, c)
	declined := func() int { return topicMetrics(c, "t").DeclinedSlots }
	eventually(t, 10*time.Second, "every slot held", func() bool { return topicMetrics(c, "t").OwnedSlots == slots })

	// Sample the declines while the link flaps: how often they began.
	var began atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		was := false
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			now := declined() > 0
			if now && !was {
				began.Add(1)
			}
			was = now
		}
	}()
	var healed time.Time
	for range 3 {
		p.Cut()
		time.Sleep(5 * time.Second)
		p.Heal()
		healed = time.Now()
		time.Sleep(2 * time.Second)
	}
	assert.Positive(t, declined(), "the flapping master's slots not declined as the link flaps")
	eventually(t, 20*time.Second, "the master taken back once the link held", func() bool { return declined() == 0 })
	back := time.Since(healed)
	close(stop)
	<-sampled
	outOfReach := 0
	for _, line := range warned.Logged() {
		if strings.Contains(line, "out of reach of this process") {
			outOfReach++
		}
	}
	t.Logf("declines began %d times over three drops; the master was taken back %.1f s after the last heal",
		began.Load(), back.Seconds())
	assert.Equal(t, int64(2), began.Load(), "times the declines began")
	assert.Equal(t, 2, outOfReach, "Warn lines of a master out of reach")
}
