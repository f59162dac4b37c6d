package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
)

// RedisMember is a worker of the Redis coordinator as the admin reads see it.
type RedisMember struct {
	ID      string
	Host    string
	PID     int
	Started time.Time
	Topics  map[string]int // topic → threads
	Leader  bool
	Leaving bool
	// Declined lists per topic the slots it cannot serve now (their data out
	// of its reach), which the assignment moves to others while any can.
	Declined map[string][]int
	// LastHeartbeat is when its membership was last renewed, by the Redis
	// clock; Expires is when it lapses unless renewed again.
	LastHeartbeat, Expires time.Time
}

// RedisSlot is one slot of a topic under the Redis coordinator.
type RedisSlot struct {
	Slot     int
	Assigned Owner  // what the leader decided (worker "": nobody)
	Holder   string // the worker whose claim stands ("" when released or never claimed)
	Token    int64  // the fencing token of the owner record
}

// RedisMembers lists the unexpired workers of the Redis coordinator in
// namespace, sorted by id. It reads three keys and the Redis time, in one
// round trip.
func RedisMembers(ctx context.Context, client redis.UniversalClient, namespace string) ([]RedisMember, error) {
	keys := rdb.NewKeyspace(namespace)
	p := rdb.NewRoutedPipeline(client)
	pipe := p.On(ctx, keys.Members()) // every key of the namespace shares its hash tag
	members := pipe.ZRangeWithScores(ctx, keys.Members(), 0, -1)
	descs := pipe.HGetAll(ctx, keys.Workers())
	leader := pipe.Get(ctx, keys.Leader())
	now := pipe.Time(ctx)
	if err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("rmq: redis coordinator members: %w", err)
	}
	var out []RedisMember
	for _, z := range members.Val() {
		id, _ := z.Member.(string)
		expires := time.UnixMilli(int64(z.Score))
		if !expires.After(now.Val()) {
			continue
		}
		m := RedisMember{ID: id, Expires: expires, Leader: id == leader.Val(), Topics: map[string]int{}}
		var d redisWorker
		if err := json.Unmarshal([]byte(descs.Val()[id]), &d); err == nil {
			m.Host, m.PID, m.Leaving, m.Declined = d.Host, d.PID, d.Leaving, d.Declined
			m.Started = time.UnixMilli(d.Started)
			m.LastHeartbeat = expires.Add(-time.Duration(d.TTL) * time.Millisecond)
			for t, spec := range d.Topics {
				m.Topics[t] = spec.Threads
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b RedisMember) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// RedisSlots returns every slot of topic (slots of them) under the Redis
// coordinator of namespace: assignment and owner record. It reads one key
// per slot, in one pipeline.
func RedisSlots(ctx context.Context, client redis.UniversalClient, namespace, topic string, slots int) ([]RedisSlot, error) {
	co := rdb.NewCoordination(client, rdb.NewKeyspace(namespace))
	vals, err := co.Assignments(ctx, []string{topic})
	if err != nil {
		return nil, fmt.Errorf("rmq: redis coordinator assignment of %s: %w", topic, err)
	}
	assigned, err := decodeAssignment(vals[0])
	if err != nil {
		return nil, fmt.Errorf("rmq: redis coordinator assignment of %s: %w", topic, err)
	}
	records, err := co.Owners(ctx, rdb.NewKeyspace(namespace).OwnerKeys(topic, slots))
	if err != nil {
		return nil, fmt.Errorf("rmq: redis coordinator owners of %s: %w", topic, err)
	}
	out := make([]RedisSlot, slots)
	for i := range out {
		out[i] = RedisSlot{Slot: i, Holder: holderOf(records[i]), Token: tokenOf(records[i])}
		if i < len(assigned) {
			out[i].Assigned = assigned[i]
		}
	}
	return out, nil
}
