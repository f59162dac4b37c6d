package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// ErrInvalidConfig "is returned by New and Run for a bad configuration": a
// configuration ZooKeeper can never accept must fail New, or at the latest
// Run, with ErrInvalidConfig, not leave Run retrying for ever.
func TestConfigUnusableValuesAreInvalidConfig(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	cases := map[string]zookeeper.Config{
		"worker id with a control character": {WorkerID: "bad\tid"},
		"root with a .. component":           {Root: "/rmq-test/../rmq-review"},
		"root with a . component":            {Root: "/rmq-test/./rmq-review"},
		"empty ACL":                          {ACL: []zk.ACL{}},
		"auth ACL without Auth":              {ACL: zk.AuthACL(zk.PermAll)},
		"server address with a bad port":     {Servers: []string{"127.0.0.1:notaport"}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if cfg.Servers == nil {
				cfg.Servers = servers
			}
			cfg.SessionTimeout = 4 * time.Second
			if cfg.Root == "" {
				cfg.Root = "/rmq-test"
			}
			if cfg.WorkerID == "" {
				cfg.WorkerID = "cfg"
			}
			z, err := zookeeper.New(cfg)
			if err != nil {
				assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig)
				return
			}
			defer z.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			ns := fmt.Sprintf("cfg-%d", time.Now().UnixNano())
			err = z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: []coordinator.TopicThreads{
				{Topic: "t", SlotAmount: 2, Threads: 1, Definition: `{"slotAmount":2,"type":"Priority"}`}}},
				newHolder(&sharedSlots{holders: map[int]int{}}))
			assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig,
				"New accepted the config and Run kept retrying for 4 s instead of failing (ctx err: %v)", ctx.Err())
		})
	}
}
