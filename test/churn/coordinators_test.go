package churn_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// coordinatorKind is one kind of coordinator the churn harness runs: how a
// worker process builds its coordinator, and how the parent watches it.
type coordinatorKind struct {
	// name is the kind's key in coordinatorKinds, passed to worker processes
	// in churnCoordEnv.
	name string
	// worker builds the coordinator of worker process id (in that process)
	// whose messages live on client, closed when t ends.
	worker func(t *testing.T, id string, log *slog.Logger, client redis.UniversalClient) (coordinator.Coordinator, error)
	// observer builds the parent's view of the coordinator, closed when t ends.
	observer func(t *testing.T, client redis.UniversalClient) (observer, error)
	// The kind's goals for how long until every slot is served again (for
	// the report): graceful after a join or a thaw; graceful plus inHand
	// after a graceful stop whose worker has a slow listener in hand;
	// churnSession plus crashMargin after a kill or a freeze.
	graceful, inHand, crashMargin time.Duration
}

// coordinatorKinds are the kinds a worker process may be asked to build.
var coordinatorKinds = map[string]coordinatorKind{
	zookeeperKind.name: zookeeperKind,
	redisKind.name:     redisKind,
	defaultKind.name:   defaultKind,
	localKind.name:     localKind,
}

// observer is the parent's view of a coordinator.
type observer interface {
	// coordinator is the coordinator of the parent's client, which defines
	// the topic: it records the definition wherever the coordinator keeps
	// topic definitions. The parent never starts it.
	coordinator() coordinator.Coordinator
	// slots returns every slot of topic with its assigned owner and the
	// thread that holds it now ("" worker: nobody).
	slots(ctx context.Context, ns, topic string) ([]slotView, error)
	// workers returns the ids of the workers registered in ns.
	workers(ctx context.Context, ns string) ([]string, error)
}

// slotView is one slot as the coordinator shows it.
type slotView struct {
	Slot             int
	Assigned, Holder coordinator.Owner
}

// --- ZooKeeper ---------------------------------------------------------------

// churnZKRoot is the root of the churn test's ZooKeeper nodes.
const churnZKRoot = "/rmq-churn"

// zookeeperKind runs the churn test over the ZooKeeper coordinator of
// RMQ_ZK_SERVERS.
var zookeeperKind = coordinatorKind{
	name:     "zookeeper",
	graceful: 2 * time.Second, crashMargin: 2 * time.Second,
	worker: func(t *testing.T, id string, log *slog.Logger, _ redis.UniversalClient) (coordinator.Coordinator, error) {
		z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: churnSession,
			Root: churnZKRoot, WorkerID: id, Logger: log})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { z.Close() })
		return z, nil
	},
	observer: func(t *testing.T, _ redis.UniversalClient) (observer, error) {
		z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: churnSession,
			Root: churnZKRoot})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { z.Close() })
		return zookeeperObserver{z}, nil
	},
}

// zookeeperObserver reads the ZooKeeper coordinator's nodes.
type zookeeperObserver struct{ z *zookeeper.Coordinator }

func (o zookeeperObserver) coordinator() coordinator.Coordinator { return o.z }

func (o zookeeperObserver) slots(ctx context.Context, ns, topic string) ([]slotView, error) {
	_, slots, err := o.z.Assignment(ctx, ns, topic)
	if err != nil {
		return nil, err
	}
	out := make([]slotView, len(slots))
	for i, s := range slots {
		out[i] = slotView{Slot: s.Slot, Assigned: s.Assigned, Holder: s.Holder}
	}
	return out, nil
}

func (o zookeeperObserver) workers(ctx context.Context, ns string) ([]string, error) {
	ws, err := o.z.Workers(ctx, ns)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids, nil
}
