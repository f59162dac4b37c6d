package rmq

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/coordinator"
)

// levels counts the log records at each level.
type levels struct {
	mu sync.Mutex
	n  map[slog.Level]int
}

func (l *levels) Enabled(_ context.Context, _ slog.Level) bool { return true }
func (l *levels) WithAttrs([]slog.Attr) slog.Handler           { return l }
func (l *levels) WithGroup(string) slog.Handler                { return l }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[r.Level]++
	return nil
}

// A slot whose pops are refused while its hash slot moves waits on its own,
// its pause doubling from 10 ms to at most a second (with jitter); the first
// refusal is logged at Debug, and only every slotMoveWarn-th in a row at
// Warn (a migration left open).
func TestSlotMovingWarnsOnlyAfterManyRefusals(t *testing.T) {
	logged := &levels{n: map[slog.Level]int{}}
	c := &Client{cfg: defaultConfig()}
	c.cfg.logger = slog.New(logged)
	th := newThread(&subscription{c: c, topic: &topicInfo{Topic: Topic{Name: "t"}}}, 0)
	lease, _ := coordinator.NewLease("t", 3, 0, 1)
	s := &slotState{lease: lease}
	refused := errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	now := time.Now()
	var longest time.Duration
	for i := 1; i <= 2*slotMoveWarn; i++ {
		th.slotMoving(s, now, refused)
		pause := s.next.Sub(now)
		assert.Positive(t, pause, "refusal %d", i)
		assert.LessOrEqual(t, pause, time.Second, "refusal %d", i)
		longest = max(longest, pause)
		switch i {
		case 1:
			assert.Equal(t, 1, logged.n[slog.LevelDebug], "the first refusal")
			assert.Zero(t, logged.n[slog.LevelWarn], "the first refusal")
		case slotMoveWarn - 1:
			assert.Zero(t, logged.n[slog.LevelWarn], "%d refusals", i)
		case slotMoveWarn:
			assert.Equal(t, 1, logged.n[slog.LevelWarn], "%d refusals", i)
		}
	}
	assert.Equal(t, 2, s.moving/slotMoveWarn)
	assert.Equal(t, 2, logged.n[slog.LevelWarn], "a Warn every %d refusals", slotMoveWarn)
	assert.Equal(t, 1, logged.n[slog.LevelDebug], "Debug for the first only")
	assert.Greater(t, longest, 400*time.Millisecond, "the pause grows toward a second")
}
