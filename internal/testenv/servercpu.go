package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ServersCPU returns the CPU seconds the servers of c have spent
// (used_cpu_user + used_cpu_sys of INFO cpu): its one node, or every node of
// a Cluster client, replicas included. A server whose INFO has no CPU
// figures (miniredis) is an error.
func ServersCPU(ctx context.Context, c redis.UniversalClient) (float64, error) {
	var mu sync.Mutex
	total := 0.0
	add := func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		found := 0
		for line := range strings.SplitSeq(info, "\r\n") {
			name, v, _ := strings.Cut(line, ":")
			if name == "used_cpu_user" || name == "used_cpu_sys" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("INFO cpu %s: %w", name, err)
				}
				mu.Lock()
				total += f
				mu.Unlock()
				found++
			}
		}
		if found != 2 {
			return fmt.Errorf("no CPU figures in INFO cpu of %s", n.Options().Addr)
		}
		return nil
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, add)
	case *redis.Client:
		err = add(ctx, c)
	default:
		err = fmt.Errorf("testenv: no servers known for a %T", c)
	}
	return total, err
}
