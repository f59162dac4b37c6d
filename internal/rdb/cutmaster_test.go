package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// oneKeyPerMaster returns a key of ns on each of the Cluster's three
// masters, each set to its own name.
func oneKeyPerMaster(t *testing.T, direct *redis.ClusterClient, ns string) []string {
	t.Helper()
	var keys []string
	seen := map[string]bool{}
	for i := 0; len(keys) < 3 && i < 1000; i++ {
		k := fmt.Sprintf("%s:{k%d}", ns, i)
		if m := testenv.MasterOf(t, direct, k); !seen[m] {
			seen[m] = true
			keys = append(keys, k)
			require.NoError(t, direct.Set(context.Background(), k, k, 0).Err())
		}
	}
	require.Len(t, keys, 3, "three masters")
	return keys
}

// viaPartition returns a Cluster client that reaches the master at addr
// only through a Partition, with the given read timeout and no retries.
func viaPartition(t *testing.T, addr string, readTimeout time.Duration) (redis.UniversalClient, *testenv.Partition) {
	t.Helper()
	p := testenv.StartPartition(t, addr)
	c := testenv.ClusterVia(t, map[string]string{addr: p.Addr()}, func(o *redis.ClusterOptions) {
		o.ReadTimeout, o.MaxRetries = readTimeout, -1
	}).Redis
	return c, p
}
