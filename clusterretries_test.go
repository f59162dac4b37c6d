package rmq_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A Cluster client that sets MaxRetries gets a warning from New: go-redis
// would send a whole pipeline again after its first command's refusal, and
// run a consumer's pops twice. Its default (no retries) gets none.
func TestNewWarnsOfClusterMaxRetries(t *testing.T) {
	b := testenv.Cluster(t)
	addrs := b.Redis.(*redis.ClusterClient).Options().Addrs
	for _, tc := range []struct {
		retries int
		warned  bool
	}{{0, false}, {3, true}} {
		var logs lockedBuffer
		r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: tc.retries})
		c, err := rmq.New(r, rmq.WithNamespace(testenv.Namespace(t, b)),
			rmq.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		require.NoError(t, err)
		require.NoError(t, c.Close(context.Background()))
		require.NoError(t, r.Close())
		assert.Equal(t, tc.warned, strings.Contains(logs.String(), "sets MaxRetries"), "MaxRetries %d: %s", tc.retries, logs.String())
	}
}
