package coordinator

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Heartbeats failing in a row are logged at Warn the first time and every
// 20th, not once per try (a fifth of the TTL apart: every 400 ms here).
func TestFailingHeartbeatsWarnOnceInAWhile(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	co := &flakyCoordination{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))}
	warnings := &testenv.Warnings{}
	board := newSlotBoard()
	m := Member{Namespace: ns, DrainTimeout: time.Second,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 4, Threads: 1}}}
	run := newRedisRun(co, RedisConfig{LeaseTTL: 2 * time.Second, WorkerID: "a"}, slog.New(warnings), m,
		&testThreads{worker: "a", board: board, drain: 5 * time.Millisecond})
	goRun(t, run, "a")
	waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 4 })

	co.cut.Store(true)
	time.Sleep(4 * time.Second) // about ten heartbeats
	co.cut.Store(false)
	waitFor(t, board, 10*time.Second, "a holds every slot again", func() bool { return board.count("a") == 4 })

	beats := 0
	for _, l := range warnings.Logged() {
		if strings.Contains(l, "heartbeat failed") {
			beats++
		}
	}
	assert.Equal(t, 1, beats, "Warn lines of failed heartbeats: %q", warnings.Logged())
}
