package reshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// newClient returns an RMQ client of the Cluster cl in namespace ns, with
// opts; it and its go-redis client close when t ends.
func newClient(t *testing.T, cl *testenv.PrivateCluster, ns string, opts ...rmq.Option) *rmq.Client {
	t.Helper()
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { r.Close() })
	c, err := rmq.New(r, append([]rmq.Option{rmq.WithNamespace(ns)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// start runs c's consumers until t ends, when c must close within 10 s and
// Start return nil.
func start(t *testing.T, c *rmq.Client) {
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, c.Close(ctx))
		assert.NoError(t, <-done)
	})
}

// nodeClient returns a client of the node at addr, closed when t ends.
func nodeClient(t *testing.T, addr string) *redis.Client {
	n := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { n.Close() })
	return n
}
