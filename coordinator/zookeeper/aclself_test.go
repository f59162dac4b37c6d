package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// An ACL that does not let the coordinator itself create, write and delete
// (world:read alone, with or without Auth) is refused by New with
// ErrInvalidConfig, and leaves nothing behind: the corrected configuration
// joins on the same Root. (New accepted it; Run retried for ever, having
// created the missing part of Root read-only for everybody, where the
// corrected configuration could not join either.)
func TestUnwritableACLIsInvalidConfig(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	auth := &zookeeper.DigestAuth{User: "acl", Password: "pw"}
	cases := map[string]zookeeper.Config{
		"world read-only ACL without Auth": {ACL: zk.WorldACL(zk.PermRead)},
		"world read-only ACL with Auth":    {Auth: auth, ACL: zk.WorldACL(zk.PermRead)},
	}
	topics := []coordinator.TopicThreads{{Topic: "t", SlotAmount: 2, Threads: 1, Definition: `{"slotAmount":2,"type":"Priority"}`}}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			root := fmt.Sprintf("/rmq-acl-%d", time.Now().UnixNano())
			t.Cleanup(func() { deleteTree(t, servers, root) })
			cfg.Servers, cfg.SessionTimeout, cfg.Root, cfg.WorkerID = servers, 4*time.Second, root, "cfg"
			ns := fmt.Sprintf("acl-%d", time.Now().UnixNano())
			z, err := zookeeper.New(cfg)
			if err != nil {
				assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig)
			} else {
				defer z.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err = z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: topics},
					newHolder(&sharedSlots{holders: map[int]int{}}))
				assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig,
					"New accepted the config and Run kept retrying for 5 s instead of failing (Run returned %v)", err)
			}

			// The same worker, corrected (the default ACL), on the same Root.
			good := cfg
			good.ACL = nil
			z2, err := zookeeper.New(good)
			require.NoError(t, err)
			defer z2.Close()
			ctx, cancel := context.WithCancel(context.Background())
			h := newHolder(&sharedSlots{holders: map[int]int{}})
			done := make(chan error, 1)
			go func() {
				done <- z2.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: topics}, h)
			}()
			start := time.Now()
			for h.valid() < 2 && time.Since(start) < 8*time.Second {
				time.Sleep(20 * time.Millisecond)
			}
			assert.Equal(t, 2, h.valid(), "the corrected configuration holds no slot 8 s after it started: the bad run left %s read-only", root)
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// deleteTree deletes path and everything under it, as far as the ACLs let an
// unauthenticated session.
func deleteTree(t *testing.T, servers []string, path string) {
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return
	}
	defer conn.Close()
	var del func(p string)
	del = func(p string) {
		children, _, _ := conn.Children(p)
		for _, c := range children {
			del(p + "/" + c)
		}
		_ = conn.Delete(p, -1)
	}
	del(path)
}
