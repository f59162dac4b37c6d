package rmq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// A Send whose command went out but whose reply Close (its ctx ended) did
// not wait for fails with an error that wraps ErrClosed and says that the
// message may have been stored; here it is, once the network heals. Close
// itself returns its ctx's error, having cut the Send short.
func TestCloseCutSendSaysItMayBeStored(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	p := testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
	through := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { through.Close() })
	ns := testenv.Namespace(t, b)
	c, err := rmq.New(through, rmq.WithNamespace(ns))
	require.NoError(t, err)
	define(t, c, "t", 1, rmq.Priority)
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("before"), Priority: 20}))

	p.Cut()
	sent := make(chan error, 1)
	go func() {
		sent <- c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("cut"), Priority: 20})
	}()
	eventually(t, time.Second, "the Send is written", func() bool { return c.Metrics().SendWrites >= 2 })
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Close(short), context.DeadlineExceeded, "Close cut a Send short: its ctx ended first")
	err = <-sent
	t.Logf("Send cut by Close: %v", err)
	require.ErrorIs(t, err, rmq.ErrClosed)
	assert.Contains(t, err.Error(), "may have been stored")
	assert.ErrorIs(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("after"), Priority: 20}), rmq.ErrClosed)

	p.Heal()
	eventually(t, 5*time.Second, "the cut Send's command runs once the network heals", func() bool {
		_, err := b.Redis.ZScore(ctx, ns+":{t:0}:store", "cut").Result()
		return err == nil
	})
}

// Sends from many goroutines while Close runs: each Send that returned nil
// is stored; one that failed and is stored anyway failed with ErrClosed
// saying that it may have been stored, which only a Close whose ctx ended
// says. Each Send has a content of its own.
func TestCloseDuringSendsTellsWhatMayBeStored(t *testing.T) {
	t.Run("single/ended", func(t *testing.T) { closeDuringSends(t, testenv.Single(t), true) })
	t.Run("single/graceful", func(t *testing.T) { closeDuringSends(t, testenv.Single(t), false) })
	t.Run("cluster/graceful", func(t *testing.T) { closeDuringSends(t, testenv.Cluster(t), false) })
}

func closeDuringSends(t *testing.T, b testenv.Backend, ended bool) {
	ctx := context.Background()
	const senders = 32
	for round := range 20 {
		c := newClient(t, b)
		define(t, c, "t", 1, rmq.Priority)
		content := func(g, i int) string { return fmt.Sprintf("r%d-g%d-%d", round, g, i) }
		errs := make([][]error, senders)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range senders {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content(g, i)), Priority: 20})
					if errs[g] = append(errs[g], err); err != nil {
						return
					}
				}
			})
		}
		time.Sleep(30 * time.Millisecond)
		closeCtx, cancel := context.WithCancel(ctx)
		if ended {
			cancel()
		}
		_ = c.Close(closeCtx)
		cancel()
		close(stop)
		wg.Wait()
		members, err := b.Redis.ZRange(ctx, c.Namespace()+":{t:0}:store", 0, -1).Result()
		require.NoError(t, err)
		stored := make(map[string]bool, len(members))
		for _, m := range members {
			stored[m] = true
		}
		for g := range senders {
			for i, err := range errs[g] {
				mayBe := err != nil && strings.Contains(err.Error(), "may have been stored")
				switch {
				case err == nil:
					require.True(t, stored[content(g, i)], "round %d: Send of %s returned nil, but it is not stored", round, content(g, i))
				case stored[content(g, i)]:
					require.ErrorIs(t, err, rmq.ErrClosed, "round %d: %s", round, content(g, i))
					require.True(t, mayBe, "round %d: Send of %s returned %v, but Redis stored it", round, content(g, i), err)
				}
				if mayBe {
					require.True(t, ended, "round %d: a graceful Close cut a Send off: %v", round, err)
				}
			}
		}
	}
}
