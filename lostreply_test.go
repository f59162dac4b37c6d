package rmq_test

import (
	"context"
	"fmt"
	"io"
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

// lostReply lets the first command it matches after it is armed run in
// Redis, then tells its caller the connection broke before the reply came:
// the command ran, and the caller cannot know it. seen, if set, is told of
// every matching command that ran without an error.
type lostReply struct {
	match func(cmd redis.Cmder) bool
	seen  func(cmd redis.Cmder)
	armed atomic.Bool
	lost  atomic.Int64
}

func (h *lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.match(cmd) {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err
		}
		if h.seen != nil {
			h.seen(cmd)
		}
		if !h.armed.CompareAndSwap(true, false) {
			return nil
		}
		h.lost.Add(1)
		cmd.SetErr(io.ErrUnexpectedEOF)
		return io.ErrUnexpectedEOF
	}
}

// cycleWithOutcomes matches a cycle call that carries outcomes: evalsha,
// sha, 5, five keys, ARGV[1..7], then ARGV[8], the outcomes.
func cycleWithOutcomes(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "evalsha" && len(args) >= 16 && args[1] == cycleSHA && fmt.Sprint(args[15]) != "0"
}

// A content sent again while its first copy is being processed waits in
// store; the call that commits the first copy may pop it. When that call's
// reply is lost, the consumer sends the commit again: the new copy must still
// be delivered, not removed by the repeated commit. On a Priority topic and
// on a FixedTime topic read ahead (WithLookahead), where the new copy is due
// a few milliseconds later.
func TestNewerCopySurvivesACommitRepeatedAfterALostReply(t *testing.T) {
	t.Parallel() // waits on timers and flushes, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		t.Run("priority", func(t *testing.T) { newerCopySurvives(t, b, false) })
		t.Run("fixed time, lookahead", func(t *testing.T) { newerCopySurvives(t, b, true) })
	})
}

func newerCopySurvives(t *testing.T, b testenv.Backend, fixed bool) {
	ctx := context.Background()
	h := &lostReply{match: cycleWithOutcomes}
	b.Redis.AddHook(h)
	// A lost call that falls in the next second pops the new copy (its
	// score differs); it comes back through the consume timeout, as a
	// retry: short here.
	c := newClient(t, b, rmq.WithConsumeTimeout(time.Second),
		rmq.WithRetryBackoff(func(int) time.Duration { return 0 }))
	typ, opts := rmq.Priority, []rmq.SubscribeOption{rmq.WithThreads(1)}
	if fixed {
		typ, opts = rmq.FixedTime, append(opts, rmq.WithLookahead(time.Second))
	}
	define(t, c, "lost", 1, typ)
	// message returns content's first copy (again false) or its new one.
	var mu sync.Mutex
	dueAgain := map[string]time.Time{}
	message := func(content string, again bool) rmq.OutgoingMessage {
		if !fixed {
			priority := int64(100)
			if again {
				priority = 200
			}
			return rmq.PriorityMessage{Topic: "lost", Content: []byte(content), Priority: priority}
		}
		due := time.Now().Add(100 * time.Millisecond)
		if again {
			due = time.Now().Add(20 * time.Millisecond) // due at once, in the same second mostly
			mu.Lock()
			dueAgain[content] = due
			mu.Unlock()
		}
		return rmq.FixedTimeMessage{Topic: "lost", Content: []byte(content), FixedTime: due}
	}
	resent := map[string]bool{}
	r := newRecorder()
	r.fail = func(m *rmq.Message) error {
		mu.Lock()
		first := !resent[string(m.Content)]
		resent[string(m.Content)] = true
		mu.Unlock()
		if !first {
			return nil
		}
		// The first copy: send it again, and lose the reply of the call
		// that commits this one.
		h.armed.Store(true)
		return c.Producer().Send(ctx, message(string(m.Content), true))
	}
	require.NoError(t, c.Subscribe("lost", r, opts...))
	run(t, c)
	// Each round loses a reply; the loss needs the commit and the new copy's
	// pop in one second, which most rounds see.
	const rounds = 4
	for i := range rounds {
		content := fmt.Sprintf("m%d", i)
		require.NoError(t, c.Producer().Send(ctx, message(content, false)))
		calls := r.waitCalls(t, 2*(i+1), 15*time.Second)
		first, again := calls[2*i], calls[2*i+1]
		assert.Equal(t, content, first.content)
		assert.Equal(t, 1, first.msg.Attempt)
		assert.Equal(t, content, again.content)
		newCopy := again.msg.Priority == 200
		if fixed {
			mu.Lock()
			newCopy = again.msg.Due.Sub(dueAgain[content]).Abs() <= time.Millisecond
			mu.Unlock()
		}
		if !newCopy {
			assert.Equal(t, 2, again.msg.Attempt, "not the new copy, nor it back from the timeout")
		}
	}
	assert.Equal(t, int64(rounds), h.lost.Load(), "a reply lost in every round")
	eventually(t, 5*time.Second, "every outcome settled", func() bool {
		st := stats(t, c, "lost")
		return st.Prepare == 0 && st.Store == 0
	})
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, r.snapshot(), 2*rounds, "no further delivery")
}
