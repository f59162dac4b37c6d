package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
)

// redisFlags are the flags that say which Redis to use.
type redisFlags struct {
	addrs   string // comma-separated
	cluster bool
}

// addRedisFlags defines -redis (with default def and usage text usage) and
// -cluster on fs.
func addRedisFlags(fs *flag.FlagSet, def, usage string) *redisFlags {
	f := &redisFlags{}
	fs.StringVar(&f.addrs, "redis", def, usage+"; several addresses mean a Redis Cluster")
	fs.BoolVar(&f.cluster, "cluster", false, "treat a single -redis address as a Redis Cluster node")
	return f
}

// list returns the addresses, without blanks.
func (f *redisFlags) list() []string {
	var out []string
	for a := range strings.SplitSeq(f.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// dial returns a client of the Redis (or Cluster) at addrs once it answers
// PING. The caller closes it.
func dial(ctx context.Context, addrs []string, cluster bool) (redis.UniversalClient, error) {
	r, err := newRedis(addrs, cluster)
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, r, addrs, ""); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// newRedis returns a client of the Redis (or Cluster) at addrs; it connects
// on first use.
func newRedis(addrs []string, cluster bool) (redis.UniversalClient, error) {
	if len(addrs) == 0 {
		return nil, usagef("-redis needs at least one address")
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: cluster}), nil
}

// ping checks that r answers within a few seconds. On a Cluster it asks the
// master of key, one the command needs ("" for any node): go-redis sends a
// PING, which names no key, to a node of its choosing, which may be a
// master that is down or frozen while the one the command reads serves.
func ping(ctx context.Context, r redis.UniversalClient, addrs []string, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if cc, ok := r.(*redis.ClusterClient); ok && key != "" {
		var node *redis.Client
		if node, err = cc.MasterForKey(ctx, key); err == nil {
			err = node.Ping(ctx).Err()
		}
	} else {
		err = r.Ping(ctx).Err()
	}
	if err != nil {
		return fmt.Errorf("redis %s: %w", strings.Join(addrs, ","), err)
	}
	return nil
}

// namespaceKey is a key in the hash slot of namespace's own keys (its topic
// definitions, flow controls and coordinator), by their shared hash tag.
func namespaceKey(namespace string) string { return "{" + namespace + "}" }

// adminFlags are the flags every admin subcommand takes.
type adminFlags struct {
	redis     *redisFlags
	namespace string
}

// addAdminFlags defines -redis, -cluster and -namespace on fs.
func addAdminFlags(fs *flag.FlagSet) *adminFlags {
	f := &adminFlags{redis: addRedisFlags(fs, "127.0.0.1:6379", "the Redis at `ADDR[,ADDR…]`")}
	fs.StringVar(&f.namespace, "namespace", "rmq", "the RMQ namespace `NS` of the topics")
	return f
}

// connect returns an RMQ client of the namespace, and a function that closes
// it and its Redis client. A bad namespace is a usage error.
func (f *adminFlags) connect(ctx context.Context) (*rmq.Client, func(), error) {
	addrs := f.redis.list()
	r, err := newRedis(addrs, f.redis.cluster)
	if err != nil {
		return nil, nil, err
	}
	c, err := rmq.New(r, rmq.WithNamespace(f.namespace))
	if err != nil {
		r.Close()
		if errors.Is(err, rmq.ErrInvalidNamespace) {
			return nil, nil, usagef("%s", strings.TrimPrefix(err.Error(), "rmq: "))
		}
		return nil, nil, err
	}
	closeAll := func() {
		c.Close(context.Background()) // never started: returns at once
		r.Close()
	}
	if err := ping(ctx, r, addrs, namespaceKey(f.namespace)); err != nil {
		closeAll()
		return nil, nil, err
	}
	return c, closeAll, nil
}

// topicCommand returns the run function of a command whose one argument is
// TOPIC: it checks the arguments before anything connects, then runs do with
// a client of the namespace, which it closes after.
func (f *adminFlags) topicCommand(do func(ctx context.Context, e *env, c *rmq.Client, topic string) error) runFunc {
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, false)
		if err != nil {
			return err
		}
		c, done, err := f.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		return do(ctx, e, c, topic)
	}
}
