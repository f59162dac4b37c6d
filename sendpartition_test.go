package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// sendOutcome is one Send of the partition tests.
type sendOutcome struct {
	content string
	err     error
	phase   int // when the Send started: 0 before the cut, 1 during it, 2 after the heal
}

// A producer cut off from Redis by a network partition while it sends, with
// each Send bounded by a deadline of its own as a service would: every Send
// that returned nil stored its message (a reply is never taken for another
// command's), Sends fail while the cut lasts, and they succeed again once
// it heals. Commands held by the partition reach Redis late; a Send that
// failed may therefore have stored its message too.
func TestSendsThroughAPartitionLoseNothing(t *testing.T) {
	addr := os.Getenv("RMQ_REDIS_ADDR")
	if addr == "" || testing.Short() {
		testenv.Missing(t, "RMQ_REDIS_ADDR")
	}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			p := testenv.StartPartition(t, addr)
			r := redis.NewClient(&redis.Options{Addr: p.Addr()})
			t.Cleanup(func() { r.Close() })
			direct := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { direct.Close() })
			c := newClient(t, testenv.Backend{Name: "redis", Redis: r}, rmq.WithSendStream(stream))
			define(t, c, "t", 8, rmq.Priority)

			outcomes := sendAcrossACut(t, c, "t", func() { p.Cut() }, func() { p.Heal() }, nil)
			checkSendOutcomes(t, outcomes, storedIn(direct, c.Namespace(), "t", 8), func(string) bool { return true })
		})
	}
}

// A producer on a Cluster cut off from one master: every Send that returned
// nil stored its message, Sends to that master's slots fail while the cut
// lasts, and Sends to the other masters' slots go on meanwhile.
func TestClusterSendsThroughAPartitionOfOneMaster(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns := testenv.Namespace(t, b)
	const slots = 16
	m, err := direct.MasterForKey(ctx, fmt.Sprintf("%s:{t:0}:store", ns))
	require.NoError(t, err)
	cutAddr := m.Options().Addr
	behind := map[int]bool{}
	for i := range slots {
		m, err := direct.MasterForKey(ctx, fmt.Sprintf("%s:{t:%d}:store", ns, i))
		require.NoError(t, err)
		behind[i] = m.Options().Addr == cutAddr
	}
	p := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()})
	c, err := rmq.New(via.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "t", slots, rmq.Priority)

	isBehind := func(content string) bool { return behind[rmq.SlotIndex([]byte(content), slots)] }
	// Even goroutines send to the cut master's slots, odd ones to the others'.
	outcomes := sendAcrossACut(t, c, "t", func() { p.Cut() }, func() { p.Heal() },
		func(g int, content string) bool { return isBehind(content) == (g%2 == 0) })
	checkSendOutcomes(t, outcomes, storedIn(direct, ns, "t", slots), isBehind)
	var before, during int
	for _, o := range outcomes {
		if o.err == nil && !isBehind(o.content) {
			switch o.phase {
			case 0:
				before++
			case 1:
				during++
			}
		}
	}
	t.Logf("Sends to the other masters' slots that succeeded: %.0f/s before the cut, %.0f/s during it",
		float64(before)/0.3, float64(during)/2)
	assert.Positive(t, during, "no Send to a master that was not cut off succeeded during the cut")
}

// storedIn reports which contents sent to topic (a Priority topic of slots
// slots, no slot basis) are in their slot's store.
func storedIn(r redis.UniversalClient, ns, topic string, slots int) func(context.Context, []string) ([]bool, error) {
	return func(ctx context.Context, contents []string) ([]bool, error) {
		cmds := make([]*redis.FloatCmd, len(contents))
		_, err := r.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, content := range contents {
				cmds[i] = p.ZScore(ctx, fmt.Sprintf("%s:{%s:%d}:store", ns, topic, rmq.SlotIndex([]byte(content), slots)), content)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		in := make([]bool, len(contents))
		for i, cmd := range cmds {
			switch err := cmd.Err(); {
			case err == nil:
				in[i] = true
			case !errors.Is(err, redis.Nil):
				return nil, err
			}
		}
		return in, nil
	}
}

// sendAcrossACut sends to topic (a Priority topic) from 16 goroutines, each
// Send with a deadline of 500 ms: for 300 ms, then across a cut of 2 s
// (cut, heal), then for 500 ms after the heal. Goroutine g sends the
// contents for which want(g, content) is true (nil: all). It returns every
// Send's outcome.
func sendAcrossACut(t *testing.T, c *rmq.Client, topic string, cut, heal func(), want func(int, string) bool) []sendOutcome {
	t.Helper()
	var phase atomic.Int32
	stop := make(chan struct{})
	var mu sync.Mutex
	var outcomes []sendOutcome
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("p-%d-%d", g, i)
				if want != nil && !want(g, content) {
					continue
				}
				ph := int(phase.Load())
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: topic, Content: []byte(content), Priority: 100})
				cancel()
				mu.Lock()
				outcomes = append(outcomes, sendOutcome{content: content, err: err, phase: ph})
				mu.Unlock()
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	phase.Store(1)
	cut()
	time.Sleep(2 * time.Second)
	heal()
	phase.Store(2)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	return outcomes
}

// checkSendOutcomes checks that every Send that returned nil stored its
// message (stored reads the topic's store), that Sends behind the cut (those
// of contents for which behind is true) failed during it, and that Sends
// succeeded after the heal.
func checkSendOutcomes(t *testing.T, outcomes []sendOutcome, stored func(context.Context, []string) ([]bool, error),
	behind func(string) bool) {
	t.Helper()
	time.Sleep(500 * time.Millisecond) // what the partition held lands
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ok, failed, failedStored, lost [3]int
	failedBehind := 0
	contents := make([]string, len(outcomes))
	for i, o := range outcomes {
		contents[i] = o.content
	}
	stores, err := stored(ctx, contents)
	require.NoError(t, err)
	for i, o := range outcomes {
		in := stores[i]
		switch {
		case o.err == nil && !in:
			lost[o.phase]++
			if lost[0]+lost[1]+lost[2] <= 10 {
				t.Errorf("Send of %q returned nil (phase %d) but the message is not stored", o.content, o.phase)
			}
		case o.err == nil:
			ok[o.phase]++
		default:
			failed[o.phase]++
			if in {
				failedStored[o.phase]++
			}
			if o.phase == 1 && behind(o.content) {
				failedBehind++
			}
		}
	}
	t.Logf("before the cut / during / after the heal: %v Sends succeeded, %v failed (%v of those stored anyway), %v lost",
		ok, failed, failedStored, lost)
	assert.Zero(t, lost[0]+lost[1]+lost[2], "Sends that returned nil without storing their message")
	assert.Positive(t, ok[0], "no Send succeeded before the cut")
	assert.Positive(t, failedBehind, "no Send behind the cut failed during it: the partition cut nothing")
	assert.Positive(t, ok[2], "no Send succeeded after the heal")
}
