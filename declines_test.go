package rmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker cut off from one Cluster master alone, its heartbeats still
// reaching its coordinator (the Redis coordinator's master, or ZooKeeper),
// declines that master's slots: the other worker serves them while the cut
// lasts, no two owned calls of a slot overlap, nothing is lost, and once
// healed the worker serves that master's slots again.
func TestClusterWorkerCutOffFromOneMasterGivesUpItsSlots(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"redis", "zookeeper"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cutOffFromOneMaster(t, kind)
		})
	}
}

// coordinatorView reads, through one coordinator, which worker holds each
// slot of topic "t" as assigned, and the workers' declines of it.
type coordinatorView struct {
	holders  func() map[int]string   // slot → worker, for slots held by their assigned worker
	declined func() map[string][]int // worker → slots of "t" it declines
}

// cutOffCoordinator returns worker w's coordinator of the given kind.
func cutOffCoordinator(t *testing.T, kind, w string, r redis.UniversalClient, lg *slog.Logger) coordinator.Coordinator {
	if kind == "redis" {
		return coordinator.NewRedis(r, coordinator.RedisConfig{WorkerID: w, LeaseTTL: 2 * time.Second, Logger: lg})
	}
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second,
		Root: "/rmq-cutoff", WorkerID: w, Logger: lg})
	require.NoError(t, err)
	t.Cleanup(func() { z.Close() })
	return z
}

// cutOffView reads the coordinator of the given kind, as observer c does.
func cutOffView(t *testing.T, kind, ns string, c *rmq.Client) coordinatorView {
	ctx := context.Background()
	if kind == "redis" {
		return coordinatorView{
			holders: func() map[int]string {
				out := map[int]string{}
				owners, err := c.Owners(ctx, "t")
				if err != nil {
					return nil
				}
				for _, o := range owners {
					if o.Holder != "" && o.Holder == o.Worker {
						out[o.Slot] = strings.SplitN(o.Holder, ".", 2)[0]
					}
				}
				return out
			},
			declined: func() map[string][]int {
				ws, err := c.Workers(ctx)
				require.NoError(t, err)
				out := map[string][]int{}
				for _, w := range ws {
					out[strings.SplitN(w.ID, ".", 2)[0]] = w.Declined["t"]
				}
				return out
			},
		}
	}
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second, Root: "/rmq-cutoff"})
	require.NoError(t, err)
	t.Cleanup(func() { z.Close() })
	return coordinatorView{
		holders: func() map[int]string {
			out := map[int]string{}
			_, slots, err := z.Assignment(ctx, ns, "t")
			if err != nil {
				return nil
			}
			for _, s := range slots {
				if s.Holder.Worker != "" && s.Holder == s.Assigned {
					out[s.Slot] = s.Holder.Worker
				}
			}
			return out
		},
		declined: func() map[string][]int {
			ws, err := z.Workers(ctx, ns)
			require.NoError(t, err)
			out := map[string][]int{}
			for _, w := range ws {
				out[w.ID] = w.Declined["t"]
			}
			return out
		},
	}
}

func cutOffFromOneMaster(t *testing.T, kind string) {
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	const slots = 32
	masterOf := func(key string) string { return testenv.MasterOf(t, direct, key) }
	coordMaster := masterOf(ns + ":{" + ns + "}:members")
	// Every master but the coordinator's goes through a proxy for worker a.
	proxies := map[string]*testenv.Partition{}
	via := map[string]string{}
	nodeOf := make([]string, slots)
	for i := range slots {
		nodeOf[i] = masterOf(fmt.Sprintf("%s:{t:%d}:store", ns, i))
		if _, ok := proxies[nodeOf[i]]; !ok && nodeOf[i] != coordMaster {
			p := testenv.StartPartition(t, nodeOf[i])
			proxies[nodeOf[i]], via[nodeOf[i]] = p, p.Addr()
		}
	}
	require.NotEmpty(t, proxies, "every slot on the coordinator's master")
	throughProxies := testenv.ClusterVia(t, via)

	var busy [slots]atomic.Int32
	var overlaps atomic.Int64
	var mu sync.Mutex
	processed := map[string]string{} // content → the worker that processed it
	listener := func(worker string) rmq.MessageListener {
		return rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			if !rmq.Owned(ctx) {
				return fmt.Errorf("slot %d not owned", m.Slot)
			}
			if busy[m.Slot].Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			busy[m.Slot].Add(-1)
			mu.Lock()
			processed[string(m.Content)] = worker
			mu.Unlock()
			return nil
		})
	}
	clients := map[string]*rmq.Client{}
	for _, w := range []string{"a", "b"} {
		r := b.Redis
		if w == "a" {
			r = throughProxies.Redis
		}
		lg := debugLogger().With("w", w)
		co := cutOffCoordinator(t, kind, w, r, lg)
		c, err := rmq.New(r, rmq.WithNamespace(ns), rmq.WithCoordinator(co), rmq.WithConsumeTimeout(2*time.Second), rmq.WithLogger(lg))
		require.NoError(t, err)
		define(t, c, "t", slots, rmq.Priority)
		require.NoError(t, c.Subscribe("t", listener(w), rmq.WithThreads(2)))
		run(t, c)
		clients[w] = c
	}
	view := cutOffView(t, kind, ns, clients["b"])
	held := func() map[string]int { // worker@master → slots it holds there
		out := map[string]int{}
		for slot, w := range view.holders() {
			out[w+"@"+nodeOf[slot]]++
		}
		return out
	}
	eventually(t, 15*time.Second, "both workers hold half the slots", func() bool {
		h := held()
		na, nb := 0, 0
		for k, n := range h {
			if strings.HasPrefix(k, "a@") {
				na += n
			} else {
				nb += n
			}
		}
		return na == slots/2 && nb == slots/2
	})
	// Cut a off from the proxied master where it holds the most slots.
	h := held()
	var cut string
	for node := range proxies {
		if cut == "" || h["a@"+node] > h["a@"+cut] {
			cut = node
		}
	}
	require.Positive(t, h["a@"+cut], "a holds no slot on a proxied master: %v", h)
	behind := func(slot int) bool { return nodeOf[slot] == cut }

	send := func(tag string, n int) []string {
		var sent []string
		for i := range n {
			content := fmt.Sprintf("%s-%d", tag, i)
			require.NoError(t, clients["b"].Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 20}))
			sent = append(sent, content)
		}
		return sent
	}
	consumedBy := func(contents []string, slotFilter func(int) bool) (bool, map[string]int) {
		mu.Lock()
		defer mu.Unlock()
		by := map[string]int{}
		for _, c := range contents {
			if slotFilter != nil && !slotFilter(rmq.SlotIndex([]byte(c), slots)) {
				continue
			}
			w, ok := processed[c]
			if !ok {
				return false, nil
			}
			by[w]++
		}
		return true, by
	}
	before := send("before", 200)
	eventually(t, 10*time.Second, "the messages sent before the cut consumed", func() bool { ok, _ := consumedBy(before, nil); return ok })

	// Messages in hand at the cut: their outcomes wait to be settled on the
	// master just cut off, where a call waits out the client's timeouts.
	edge := send("edge", 100)
	proxies[cut].Cut()
	cutAt := time.Now()
	during := send("during", 400)
	all := append(edge, during...)
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ok, _ := consumedBy(all, nil); ok {
			break
		}
		if time.Now().After(deadline) {
			holders := view.holders()
			mu.Lock()
			waiting := map[int]int{}
			for _, c := range all {
				if _, ok := processed[c]; !ok {
					waiting[rmq.SlotIndex([]byte(c), slots)]++
				}
			}
			mu.Unlock()
			for s, n := range waiting {
				t.Logf("slot %d (behind the cut: %v): %d messages waiting, held by its assigned worker %q", s, behind(s), n, holders[s])
			}
			t.Fatalf("not within 40 s: the messages sent during the cut consumed while it lasts; declines %v", view.declined())
		}
	}
	servedAfter := time.Since(cutAt)
	_, by := consumedBy(during, behind)
	t.Logf("%d slots of %d behind the cut; every message sent at the cut consumed %.1f s after it; those behind it by %v",
		func() int {
			n := 0
			for s := range slots {
				if behind(s) {
					n++
				}
			}
			return n
		}(), slots, servedAfter.Seconds(), by)
	assert.Zero(t, by["a"], "a processed messages of a master cut off from it")
	assert.Positive(t, by["b"])
	declined := view.declined
	d := declined()
	assert.Empty(t, d["b"])
	require.NotEmpty(t, d["a"])
	declinedNow := func(w string) int { // TopicMetrics.DeclinedSlots of w's client
		for _, m := range clients[w].TopicMetrics() {
			if m.Topic == "t" {
				return m.DeclinedSlots
			}
		}
		return -1
	}
	assert.Equal(t, len(d["a"]), declinedNow("a"), "a's metrics count the slots it declines")
	assert.Zero(t, declinedNow("b"))
	for _, s := range d["a"] {
		assert.True(t, behind(s), "a declines slot %d, not behind the cut", s)
	}
	eventually(t, 10*time.Second, "a holds its share of the slots, none behind the cut", func() bool {
		h := held()
		n := 0
		for k, v := range h {
			if strings.HasPrefix(k, "a@") {
				n += v
			}
		}
		return h["a@"+cut] == 0 && n == slots/2
	})
	rebalanced := time.Since(cutAt)

	proxies[cut].Heal()
	healedAt := time.Now()
	eventually(t, 10*time.Second, "a declines nothing after the heal", func() bool { return len(declined()["a"]) == 0 })
	t.Logf("a held its share of the slots again, none behind the cut, %.1f s after the cut; it declined nothing %.1f s after the heal",
		rebalanced.Seconds(), time.Since(healedAt).Seconds())
	after := send("after", 200)
	eventually(t, 10*time.Second, "the messages sent after the heal consumed", func() bool { ok, _ := consumedBy(after, nil); return ok })
	assert.Zero(t, overlaps.Load(), "two owned listener calls of one slot overlapped")
}
