package rdb

import (
	"context"
	"strconv"
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

// keyOn returns a key named prefix:{k<i>} whose hash slot the master at addr
// serves.
func keyOn(t *testing.T, cl *testenv.PrivateCluster, prefix, addr string) string {
	t.Helper()
	for i := 0; i < 100000; i++ {
		k := prefix + ":{k" + strconv.Itoa(i) + "}"
		if m, err := cl.MasterOf(context.Background(), testenv.KeySlot(k)); err == nil && m == addr {
			return k
		}
	}
	t.Fatalf("no key on %s", addr)
	return ""
}
