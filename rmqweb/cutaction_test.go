package rmqweb_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// A requeue or a purge cut short, here by the request's timeout as a large
// one may be, says how many dead messages it moved before it failed: the
// seeded topic has one dead message in each of two slots, and every call on
// a dead set after the first answered one hangs until the request's
// context ends. (The page said only "context deadline exceeded", though
// the first slot's message had moved.)
func TestCutActionSaysWhatItDidBefore(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		for _, tc := range []struct {
			action string
			form   url.Values
			said   string
		}{
			{"requeue", url.Values{"t": {"renders"}}, "Requeued 1 dead message before it failed (run it again for the rest): "},
			{"purge", url.Values{"t": {"renders"}, "confirm": {"yes"}}, "Purged 1 dead message before it failed (run it again for the rest): "},
		} {
			t.Run(tc.action, func(t *testing.T) {
				seeded := seed(t, b)
				h := &hangAfterFirstDeadCall{}
				c, err := rmq.New(hookedCopy(t, b, h), rmq.WithNamespace(seeded.Namespace()))
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close(context.Background()) })
				base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true, Timeout: time.Second})
				_, page := get(t, hc, base+"topic?t=renders")
				tc.form.Set("csrf", csrfOf(t, page))
				resp, body := post(t, hc, base+tc.action, tc.form)
				require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
				assert.Contains(t, body, tc.said)
				assert.Contains(t, body, "deadline exceeded")
				assert.Equal(t, int64(1), h.answered.Load())
				assert.Equal(t, int64(1), stats(t, seeded, "renders").Dead, "one of the two moved")
			})
		}
	})
}

// hookedCopy returns a new client of b's deployment with hook h.
func hookedCopy(t *testing.T, b testenv.Backend, h redis.Hook) redis.UniversalClient {
	t.Helper()
	var r redis.UniversalClient
	switch c := b.Redis.(type) {
	case *redis.Client:
		r = redis.NewClient(c.Options())
	case *redis.ClusterClient:
		r = redis.NewClusterClient(c.Options())
	default:
		t.Fatalf("a client of type %T", b.Redis)
	}
	r.AddHook(h)
	t.Cleanup(func() { r.Close() })
	return r
}

// hangAfterFirstDeadCall lets one command on a dead set be answered (a
// requeue's script, or a purge's ZREMRANGEBYRANK); every later one waits
// for its context's end.
type hangAfterFirstDeadCall struct{ answered atomic.Int64 }

func (h *hangAfterFirstDeadCall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangAfterFirstDeadCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *hangAfterFirstDeadCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !onDeadSet(cmd) {
			return next(ctx, cmd)
		}
		if h.answered.Load() >= 1 {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		err := next(ctx, cmd)
		if err == nil {
			h.answered.Add(1)
		}
		return err
	}
}

// onDeadSet reports whether cmd is a script call or ZREMRANGEBYRANK naming
// a dead set.
func onDeadSet(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "evalsha", "eval", "evalsha_ro", "zremrangebyrank":
	default:
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasSuffix(s, ":dead") {
			return true
		}
	}
	return false
}
