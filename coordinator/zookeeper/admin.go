package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
)

// WorkerInfo describes a live worker.
type WorkerInfo struct {
	ID      string
	Host    string
	PID     int
	Topics  map[string]int // topic → threads
	Started time.Time
	Leader  bool
	// Declined lists per topic the slots the worker cannot serve now
	// (coordinator.Member.Declines): the assignment moves them to workers
	// that can, while any can.
	Declined map[string][]int
}

// Workers lists the live workers of namespace, sorted by id; one whose node
// it cannot parse (not written by this package) by its id alone.
func (z *Coordinator) Workers(ctx context.Context, namespace string) ([]WorkerInfo, error) {
	conn, err := z.adminConn(ctx)
	if err != nil {
		return nil, err
	}
	p := newNodePaths(z.cfg.Root, namespace)
	var out []WorkerInfo
	err = withContext(ctx, func() error {
		ids, _, err := conn.Children(p.workers())
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		leaderID := ""
		if names, _, err := conn.Children(p.election()); err == nil {
			if lead := electionLeader(names); lead != "" {
				if data, _, err := conn.Get(p.election() + "/" + lead); err == nil {
					leaderID = string(data)
				}
			}
		}
		for _, id := range slices.Sorted(slices.Values(ids)) {
			data, _, err := conn.Get(p.worker(id))
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			var w workerNode
			if err := json.Unmarshal(data, &w); err != nil {
				// Not written by this package: listed, with what it
				// says unknown, rather than hiding every other worker.
				out = append(out, WorkerInfo{ID: id, Leader: id == leaderID})
				continue
			}
			out = append(out, WorkerInfo{ID: id, Host: w.Host, PID: w.PID, Topics: w.Topics,
				Started: time.UnixMilli(w.Started), Leader: id == leaderID, Declined: w.Declines})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rmq: zookeeper workers of %q: %w", namespace, err)
	}
	return out, nil
}

// SlotOwnership is one slot's assigned owner and its current holder.
type SlotOwnership struct {
	Slot     int
	Assigned coordinator.Owner // what the leader decided ("" worker: nobody)
	Holder   coordinator.Owner // whose owner node exists now ("" worker: nobody)
	Token    int64             // the holder's fencing token
}

// ErrUnknownTopic is returned by Assignment for a topic ZooKeeper has no
// record of: neither its definition (written when a worker subscribed to it
// joined, or by RecordTopic) nor an assignment.
var ErrUnknownTopic = errors.New("rmq: unknown topic")

// Assignment returns, for every slot of topic, its assigned and its current
// owner. They differ while a slot is being handed over. A topic defined but
// not yet assigned (no worker subscribed) has no slots; one ZooKeeper has no
// record of fails with ErrUnknownTopic, and an owner node it cannot read
// fails the call.
func (z *Coordinator) Assignment(ctx context.Context, namespace, topic string) (int64, []SlotOwnership, error) {
	conn, err := z.adminConn(ctx)
	if err != nil {
		return 0, nil, err
	}
	p := newNodePaths(z.cfg.Root, namespace)
	// The call fills these; if ctx ends first it goes on in the background,
	// so they are read only once it has returned.
	var generation int64
	var slots []SlotOwnership
	err = withContext(ctx, func() error {
		var a assignmentNode
		data, _, err := conn.Get(p.assignment(topic))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if errors.Is(err, zk.ErrNoNode) {
			if defined, _, err := conn.Exists(p.topic(topic)); err != nil {
				return err
			} else if !defined {
				return fmt.Errorf("%w %q in namespace %q (no definition or assignment in ZooKeeper)", ErrUnknownTopic, topic, namespace)
			}
		}
		if err == nil {
			if err := json.Unmarshal(data, &a); err != nil {
				return err
			}
		}
		generation = a.Generation
		holders, _, err := conn.Children(p.owners(topic))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		assigned := a.owners()
		n := len(assigned)
		held := map[int]SlotOwnership{}
		for _, h := range holders {
			slot, err := strconv.Atoi(h)
			if err != nil {
				continue
			}
			data, st, err := conn.Get(p.owner(topic, slot))
			if errors.Is(err, zk.ErrNoNode) {
				continue // released meanwhile
			}
			if err != nil {
				return fmt.Errorf("owner of slot %d: %w", slot, err)
			}
			var o ownerNode
			_ = json.Unmarshal(data, &o)
			held[slot] = SlotOwnership{Holder: coordinator.Owner(o), Token: st.Czxid}
			n = max(n, slot+1)
		}
		slots = make([]SlotOwnership, n)
		for i := range slots {
			slots[i] = held[i]
			slots[i].Slot = i
			if i < len(assigned) {
				slots[i].Assigned = assigned[i]
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("rmq: zookeeper assignment of %q/%q: %w", namespace, topic, err)
	}
	return generation, slots, nil
}
