package rmq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
)

// scriptedPresence answers the presence calls with errs in turn, then
// with success.
type scriptedPresence struct {
	rdb.Coordination
	errs  []error
	calls int
}

func (s *scriptedPresence) Presence(context.Context, string, time.Duration, string, ...string) (string, int64, error) {
	s.calls++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return "", 0, err
	}
	return "", 0, nil
}

// recordedLog keeps the messages of one level.
type recordedLog struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recordedLog) log(msg string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
}

// join waits out refusals while the namespace's hash slot moves (more of
// them than the tries a failing Redis gets), logging the row once at Debug,
// and fails after five tries of any other error.
func TestPresenceJoinWaitsOutAMovingSlot(t *testing.T) {
	moving := rdb.ReplyError("TRYAGAIN Multiple keys request during rehashing of slot")
	co := &scriptedPresence{errs: []error{moving, moving, moving, moving, moving, moving, moving}}
	var warns, debugs recordedLog
	p := &presence{co: co, me: "redis/host:1:x", log: warns.log, warn: warns.log, debug: debugs.log}
	require.NoError(t, p.join(context.Background()))
	assert.Equal(t, 8, co.calls, "seven refusals, then the entry")
	assert.Len(t, debugs.msgs, 1, "one Debug line for the row")
	assert.Empty(t, warns.msgs)

	down := errors.New("injected: redis down")
	co = &scriptedPresence{errs: []error{moving, down, down, down, down, down}}
	p.co = co
	err := p.join(context.Background())
	require.ErrorIs(t, err, down)
	assert.Contains(t, err.Error(), "rmq: record presence")
	assert.Equal(t, 6, co.calls, "a refusal while the slot moves, then five failures")
}
