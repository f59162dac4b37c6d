package rmq_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/lua"
)

// groupCounter counts the pipelines that carry more than one cycle call, and
// on a Cluster those that carry a call whose slot another master serves.
// On a Cluster it counts on each node's client (a group's pipeline goes to
// its master's connections, not through the Cluster client's pipeline).
type groupCounter struct {
	groups, calls, mixed atomic.Int64
	cluster              *redis.ClusterClient
}

var cycleSHA = fmt.Sprintf("%x", sha1.Sum([]byte(lua.Cycle())))

// watch hooks g into b's client, or each node's client of b's Cluster
// (those there now and those made later).
func (g *groupCounter) watch(t *testing.T, b testenv.Backend) {
	cc, ok := b.Redis.(*redis.ClusterClient)
	if !ok {
		b.Redis.AddHook(&groupHook{g: g})
		return
	}
	g.cluster = cc
	testenv.HookNodes(t, cc, func(n *redis.Client) redis.Hook { return &groupHook{g: g, addr: n.Options().Addr} })
}

// groupHook is groupCounter's hook on one client: a node's at addr on a
// Cluster, else the single node's.
type groupHook struct {
	g    *groupCounter
	addr string
}

func (h *groupHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *groupHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *groupHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n, elsewhere := int64(0), false
		for _, c := range cmds {
			if args := c.Args(); c.Name() == "evalsha" && len(args) > 3 && args[1] == cycleSHA {
				n++
				if h.g.cluster != nil {
					if m, err := h.g.cluster.MasterForKey(ctx, fmt.Sprint(args[3])); err == nil && m.Options().Addr != h.addr {
						elsewhere = true
					}
				}
			}
		}
		if n > 1 {
			h.g.groups.Add(1)
			h.g.calls.Add(n)
			if elsewhere {
				h.g.mixed.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// A thread's slots that reach ahead pop together: one round trip for those
// whose next look is near (on a Cluster, those of one master). Every message
// still comes once, at or after its due time, in due order within its slot.
func TestLookaheadPopsAThreadsSlotsTogether(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		g := &groupCounter{}
		g.watch(t, b)
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "group", 8, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("group", r, rmq.WithLookahead(time.Second), rmq.WithThreads(1)))
		run(t, c)
		time.Sleep(100 * time.Millisecond) // the consumer is idle

		const n = 80
		first := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
		var msgs []rmq.OutgoingMessage
		for i := range n {
			at := first.Add(time.Duration(i) * 25 * time.Millisecond)
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "group", Content: []byte(fmt.Sprintf("m%02d", i)), FixedTime: at})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))

		calls := r.waitCalls(t, n, 15*time.Second)
		seen := map[string]int{}
		lastBySlot := map[int]string{}
		for _, d := range calls {
			seen[d.content]++
			assert.False(t, d.at.Before(d.msg.Due), "%s delivered %v early", d.content, d.msg.Due.Sub(d.at))
			assert.Greater(t, d.content, lastBySlot[d.msg.Slot], "in due order within slot %d", d.msg.Slot)
			lastBySlot[d.msg.Slot] = d.content
		}
		assert.Len(t, seen, n, "every message once")
		eventually(t, 5*time.Second, "every outcome settled", func() bool {
			st := stats(t, c, "group")
			return st.Prepare == 0 && st.Store == 0
		})
		t.Logf("%d round trips carried %d pops", g.groups.Load(), g.calls.Load())
		assert.Positive(t, g.groups.Load(), "the thread's slots (on a Cluster, those of one master) popped together")
		assert.Zero(t, g.mixed.Load(), "a round trip carried a slot of another master")
	})
}
