package rmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmq-go/rmq/coordinator"
)

// Worker is a process consuming the client's namespace.
type Worker struct {
	// ID is the worker id under the Redis coordinator; for other
	// coordinators, the process's presence entry.
	ID string
	// Coordinator is the kind of coordinator it runs: "redis", "zookeeper",
	// "local", or "custom".
	Coordinator string
	Host        string
	PID         int
	// The fields below are known for the Redis coordinator's workers only.
	Started       time.Time
	Topics        map[string]int // topic → threads
	OwnedSlots    map[string]int // topic → slots whose owner record names it
	Leader        bool
	Leaving       bool
	LastHeartbeat time.Time // by the Redis clock
	// Declined lists per topic the slots it cannot serve now: a Cluster
	// master it alone has not reached for a few seconds serves them. The
	// assignment moves them to workers that can, while any can.
	Declined map[string][]int
}

// Workers lists the processes consuming the namespace now, sorted by id:
// the Redis coordinator's members with what they own, and the processes of
// other coordinators as their presence entries show them.
func (c *Client) Workers(ctx context.Context) ([]Worker, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	members, err := coordinator.RedisMembers(ctx, c.redis, c.cfg.namespace)
	if err != nil {
		return nil, err
	}
	present, err := c.coord.PresentWorkers(ctx)
	if err != nil {
		return nil, fmt.Errorf("rmq: presence: %w", err)
	}
	var out []Worker
	owned := make(map[string]map[string]int)
	for _, m := range members {
		w := Worker{ID: m.ID, Coordinator: "redis", Host: m.Host, PID: m.PID, Started: m.Started, Topics: m.Topics,
			OwnedSlots: map[string]int{}, Leader: m.Leader, Leaving: m.Leaving, LastHeartbeat: m.LastHeartbeat, Declined: m.Declined}
		owned[m.ID] = w.OwnedSlots
		out = append(out, w)
	}
	if err := c.countOwned(ctx, members, owned); err != nil {
		return nil, err
	}
	for entry := range present {
		kind, proc, _ := strings.Cut(entry, "/")
		if kind == "redis" && len(members) > 0 {
			continue // listed above, in more detail
		}
		parts := strings.Split(proc, ":")
		w := Worker{ID: entry, Coordinator: kind, Host: parts[0]}
		if len(parts) > 1 {
			w.PID, _ = strconv.Atoi(parts[1])
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b Worker) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// countOwned fills owned (worker → topic → slots) from the owner records of
// every topic the members consume.
func (c *Client) countOwned(ctx context.Context, members []coordinator.RedisMember, owned map[string]map[string]int) error {
	topics := make(map[string]bool)
	for _, m := range members {
		for t := range m.Topics {
			topics[t] = true
		}
	}
	for name := range topics {
		slots, err := c.Owners(ctx, name)
		if errors.Is(err, ErrUnknownTopic) {
			continue // deleted while a member that died still lists it
		}
		if err != nil {
			return err
		}
		for _, s := range slots {
			if o := owned[s.Holder]; o != nil {
				o[name]++
			}
		}
	}
	return nil
}

// SlotOwner is one slot of a topic under the Redis coordinator.
type SlotOwner struct {
	Slot int
	// Worker and Thread are what the leader assigned ("" worker: nobody).
	Worker string
	Thread int
	// Holder is the worker whose claim on the slot stands: the one whose
	// consumers pop from it ("" while it is released or never claimed).
	Holder string
	// Token is the fencing token of the slot's owner record.
	Token int64
}

// Owners returns every slot of topic with its assigned thread and its
// current holder under the Redis coordinator: one read per slot, in one
// pipeline.
func (c *Client) Owners(ctx context.Context, topic string) ([]SlotOwner, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	t, err := c.loadTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	slots, err := coordinator.RedisSlots(ctx, c.redis, c.cfg.namespace, t.Name, t.SlotAmount)
	if err != nil {
		return nil, err
	}
	out := make([]SlotOwner, len(slots))
	for i, s := range slots {
		out[i] = SlotOwner{Slot: s.Slot, Worker: s.Assigned.Worker, Thread: s.Assigned.Thread, Holder: s.Holder, Token: s.Token}
	}
	return out, nil
}
