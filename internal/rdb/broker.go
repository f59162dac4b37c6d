// Package rdb holds all Redis I/O of RMQ behind the Broker interface, so the
// root package never builds a command by hand and tests can wrap the broker
// with fault injection.
package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Broker is every Redis operation RMQ performs.
type Broker interface {
	// SaveTopic stores def for name unless a definition exists; it returns the
	// definition stored after the call (def itself, or the earlier one).
	SaveTopic(ctx context.Context, name, def string) (string, error)
	// LoadTopic returns the stored definition of name; found is false if none.
	LoadTopic(ctx context.Context, name string) (def string, found bool, err error)
	// LoadTopics returns every stored topic definition by name.
	LoadTopics(ctx context.Context) (map[string]string, error)
	// Enqueue adds entries in one pipeline (grouped per key), then publishes
	// pubs once the entries are stored. It returns nil when every entry was
	// stored, else one error per entry (nil where that entry was stored).
	Enqueue(ctx context.Context, entries []Entry, pubs []Publication) ([]error, error)
	// Cycle runs the cycle script on one slot.
	Cycle(ctx context.Context, keys SlotKeys, req *CycleRequest) (CycleResult, error)
	// Cancel removes a pending member from a slot; it reports whether one was removed.
	Cancel(ctx context.Context, keys SlotKeys, member []byte) (bool, error)
	// Backlog returns the sizes of each slot's sets and, with dueTimes, the
	// earliest due time in each store, in one pipeline; and the Redis time.
	Backlog(ctx context.Context, slots []SlotKeys, dueTimes bool) ([]SlotBacklog, int64, error)
	// AddStats adds clients' metrics to the namespace's shared ones.
	AddStats(ctx context.Context, deltas []StatsDelta) error
	// Stats returns a topic's shared metrics, all-time and per minute.
	Stats(ctx context.Context, topic string, from, to int64) (map[string]int64, []map[string]int64, error)
	// Counts returns the sizes of each slot's sets, in one pipeline.
	Counts(ctx context.Context, slots []SlotKeys) ([]SlotCounts, error)
	// Dead returns up to limit dead entries of a slot, oldest death first.
	Dead(ctx context.Context, keys SlotKeys, limit int64) ([]DeadEntry, error)
	// Requeue moves up to limit dead members of a slot back to store (only
	// members, when given); it returns how many moved.
	Requeue(ctx context.Context, keys SlotKeys, limit int, members [][]byte) (int64, error)
	// Purge deletes every dead member of a slot; it returns how many.
	Purge(ctx context.Context, keys SlotKeys) (int64, error)
	// Publish sends one pub/sub message.
	Publish(ctx context.Context, channel, payload string) error
	// Subscribe opens a pub/sub connection on channels.
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Entry is one message to add to a store set.
type Entry struct {
	Key    string
	Score  float64
	Member []byte
	NX     bool // add only if absent (RangeMerge keeps the first due time)
}

// Publication is a pub/sub message sent after the entries of a pipeline.
type Publication struct {
	Channel string
	Payload []byte
}

// SlotCounts are the sizes of one slot's sets.
type SlotCounts struct {
	Store, Retry, Prepare, Dead int64
}

// DeadEntry is one dead message.
type DeadEntry struct {
	Member []byte
	DiedMs int64
}

// redisBroker is the Broker on a go-redis client, single node or cluster.
type redisBroker struct {
	rdb     redis.UniversalClient
	keys    Keyspace
	cluster bool
}

var _ Broker = (*redisBroker)(nil)

// New returns the Broker on rdb for the namespace of keys.
func New(rdb redis.UniversalClient, keys Keyspace) Broker {
	_, cluster := rdb.(*redis.ClusterClient)
	return &redisBroker{rdb: rdb, keys: keys, cluster: cluster}
}
