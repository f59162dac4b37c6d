package rmqprom_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// roundTrips is a go-redis hook that counts the client's round trips (a
// command, or a pipeline) and its commands by name; a read of a whole hash
// (HGETALL, or the script that reads one on its master) also counts as
// "hash read".
type roundTrips struct {
	mu       sync.Mutex
	trips    int
	commands map[string]int
}

func newRoundTrips() *roundTrips { return &roundTrips{commands: make(map[string]int)} }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

func (h *roundTrips) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips++
	for _, c := range cmds {
		h.commands[c.Name()]++
		if _, ok := hashRead(c); ok {
			h.commands["hash read"]++
		}
	}
}

// hashRead returns the key of the hash that cmd reads whole: HGETALL's, or
// that of a script call on one key and no arguments (RMQ's read on the
// master, lua/hashread.lua).
func hashRead(cmd redis.Cmder) (string, bool) {
	args := cmd.Args()
	switch cmd.Name() {
	case "hgetall":
		if len(args) == 2 {
			return fmt.Sprint(args[1]), true
		}
	case "evalsha", "eval":
		if len(args) == 4 && fmt.Sprint(args[2]) == "1" {
			return fmt.Sprint(args[3]), true
		}
	}
	return "", false
}

// read returns the round trips and the count of one command so far.
func (h *roundTrips) read(command string) (trips, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trips, h.commands[command]
}

// A storm of concurrent scrapes reads Redis at most about once a second:
// the topic list, the flow control and the backlogs are read together and
// cached, and every scrape still gets every gauge.
func TestScrapeStormReadsRedisAboutOnceASecond(t *testing.T) {
	forEachRedisAtOnce(t, func(t *testing.T, r *redis.Client) {
		ctx := context.Background()
		c, err := rmq.New(r, rmq.WithNamespace(namespace(t, r)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		topics := []string{"a", "b", "c"}
		for _, name := range topics {
			require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 4, Type: rmq.FixedTime}))
		}
		require.NoError(t, c.SetRateLimit(ctx, "b", rmq.RateLimit{PerSecond: 10, Burst: 1}))
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(rmqprom.NewCollector(c))
		gather(t, reg) // warm the client's topic cache
		time.Sleep(1100 * time.Millisecond)

		h := newRoundTrips()
		r.AddHook(h)
		const storm = 2500 * time.Millisecond
		var (
			mu      sync.Mutex
			scrapes int
			missing int // scrapes without a topic's backlog
		)
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Since(start) < storm {
					s := gather(t, reg)
					mu.Lock()
					scrapes++
					for _, name := range topics {
						if _, ok := s[`rmq_backlog_messages{state="store",topic="`+name+`"}`]; !ok {
							missing++
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		trips, lists := h.read("hash read")
		t.Logf("%d scrapes in %v: %d round trips, %d reads of a whole hash", scrapes, elapsed, trips, lists)
		assert.Greater(t, scrapes, 50, "a storm")
		assert.Zero(t, missing, "every scrape has every topic's backlog")
		reads := int(elapsed/time.Second) + 1 // one read per second, and one at the start
		assert.Positive(t, lists, "the hash reads are counted")
		assert.LessOrEqual(t, lists, 2*reads, "topics and flow control, one hash read each per read")
		assert.LessOrEqual(t, trips, reads*(2+len(topics)), "per read: two hash reads and one backlog pipeline per topic")

		// Past the cache, a scrape reads again and sees what changed.
		require.NoError(t, c.PauseTopic(ctx, "a"))
		time.Sleep(1100 * time.Millisecond)
		s := gather(t, reg)
		assert.Equal(t, 1.0, s[`rmq_topic_paused{topic="a"}`])
		assert.Equal(t, 10.0, s[`rmq_rate_limit_per_second{topic="b"}`])
	})
}
