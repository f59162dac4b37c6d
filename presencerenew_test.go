package rmq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
)

// failingPresence fails every renewal of the presence entry.
type failingPresence struct {
	rdb.Coordination
	mu    sync.Mutex
	modes []string
}

func (f *failingPresence) Presence(_ context.Context, _ string, _ time.Duration, mode string, _ ...string) (string, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modes = append(f.modes, mode)
	return "", 0, errors.New("injected: redis down")
}

// A failed renewal of the presence entry is logged at Debug and tried again
// a second later, and the entry is removed when the client stops.
func TestPresenceRenewalFailureIsLogged(t *testing.T) {
	t.Parallel() // waits on timers and flushes, reads nothing process-wide
	co := &failingPresence{}
	var mu sync.Mutex
	var debugs []string
	p := &presence{co: co, me: "redis/host:1:x", log: func(string, ...any) {},
		debug: func(msg string, _ ...any) {
			mu.Lock()
			debugs = append(debugs, msg)
			mu.Unlock()
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*presenceRenew+presenceRenew/2)
	defer cancel()
	p.renew(ctx)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, debugs, 2, "one line per failed renewal")
	co.mu.Lock()
	defer co.mu.Unlock()
	assert.Equal(t, []string{"renew", "renew", "leave"}, co.modes)
}
