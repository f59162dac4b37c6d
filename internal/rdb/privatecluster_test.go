package rdb

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/testenv"
)

// privateBroker starts a private Cluster and returns it, a client of it and
// a broker of namespace ns on that client (with opts), all closed when t
// ends.
func privateBroker(t *testing.T, ns string, opts ...Option) (*testenv.PrivateCluster, *redis.ClusterClient, *redisBroker) {
	t.Helper()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	br := New(client, NewKeyspace(ns), opts...).(*redisBroker)
	t.Cleanup(func() {
		br.Close(context.Background())
		client.Close()
	})
	return cl, client, br
}
