package rdb

import (
	"strconv"
	"strings"
)

// Keyspace names every Redis key and channel of one namespace. Nothing else in
// RMQ builds key strings. All keys of one slot share the hash tag
// "{topic:slot}", so a script may touch them together on Redis Cluster.
type Keyspace struct {
	ns string
}

// NewKeyspace returns the keyspace of namespace ns (validated by the caller).
func NewKeyspace(ns string) Keyspace { return Keyspace{ns: ns} }

// Namespace returns the namespace.
func (k Keyspace) Namespace() string { return k.ns }

// Topics is a hash: field = topic name, value = JSON topic definition.
func (k Keyspace) Topics() string { return k.ns + ":topics" }

// WakeChannel is the pub/sub channel on which producers tell consumers of
// topic that slots have messages due soon. Payload: "slot:dueMs,slot:dueMs,…",
// the earliest due time per slot in Unix ms, 0 for "due now". On a Cluster,
// where a PUBLISH is carried to every node, wake-ups go instead to the
// sharded channel of a slot (SlotKeys.Wake, SPUBLISH), which stays on the
// shard that holds the slot; the payload is the same and may name other
// slots of the topic that the same master holds.
func (k Keyspace) WakeChannel(topic string) string { return k.ns + ":wake:" + topic }

// The coordination keys of a namespace share the hash tag "{<namespace>}", so
// the Redis coordinator's scripts touch them together on Redis Cluster.
func (k Keyspace) coordKey(name string) string { return k.ns + ":{" + k.ns + "}:" + name }

// Members is a zset of the Redis coordinator: member = worker id, score =
// when its membership expires, Unix ms by the Redis clock.
func (k Keyspace) Members() string { return k.coordKey("members") }

// Workers is a hash of the Redis coordinator: worker id → its description
// (JSON: host, pid, threads per topic, whether it is leaving).
func (k Keyspace) Workers() string { return k.coordKey("workers") }

// MembersVersion is a string counting membership changes of the Redis coordinator.
func (k Keyspace) MembersVersion() string { return k.coordKey("members-version") }

// Leader is a string: the worker id of the Redis coordinator's leader,
// expiring with its lease.
func (k Keyspace) Leader() string { return k.coordKey("leader") }

// Epoch is a string counting the Redis coordinator's assignment changes.
func (k Keyspace) Epoch() string { return k.coordKey("epoch") }

// Assignment is a string of the Redis coordinator: the assignment of topic's
// slots to worker threads (JSON).
func (k Keyspace) Assignment(topic string) string { return k.coordKey("assignment:" + topic) }

// Presence is a zset of every process consuming the namespace: member =
// "<coordinator>/<process id>", score = when the entry expires, Unix ms by
// the Redis clock.
func (k Keyspace) Presence() string { return k.coordKey("presence") }

// Controls is a hash: topic → its flow control (JSON: paused, rate limit),
// set by PauseTopic, ResumeTopic and SetRateLimit, read by every consumer.
func (k Keyspace) Controls() string { return k.coordKey("control") }

// ControlChannel is the pub/sub channel on which a change of a topic's flow
// control is announced (payload: the topic), so consumers apply it at once.
func (k Keyspace) ControlChannel() string { return k.ns + ":control" }

// PresenceTopics is a hash: presence entry → the topics that process
// consumes (comma-separated).
func (k Keyspace) PresenceTopics() string { return k.coordKey("presence-topics") }

// Stats is a hash of every process's metrics of topic since the namespace
// began, flushed by each client every few seconds: field → count (see
// StatsDelta).
func (k Keyspace) Stats(topic string) string { return k.coordKey("stats:" + topic) }

// StatsMinute is a hash like Stats of what happened in one minute (Unix
// minutes), kept two hours.
func (k Keyspace) StatsMinute(topic string, minute int64) string {
	return k.coordKey("stats:" + topic + ":" + strconv.FormatInt(minute, 10))
}

// StatsMark is a string: the number of the last batch of metrics that client
// (a random id per rmq.Client) added to the shared ones, kept two hours after
// its last batch (StatsBatch).
func (k Keyspace) StatsMark(client string) string { return k.coordKey("stats-mark:" + client) }

// BreakerStates is a hash of the processes whose breaker of topic is not
// closed: field = process (its presence entry), value = "<state>|<Unix ms>",
// the state (open, half-open) and when the process wrote it, by its clock.
// Every such process rewrites its field every few seconds and deletes it
// when its breaker closes or it stops; the key expires a minute after the
// last write.
func (k Keyspace) BreakerStates(topic string) string { return k.coordKey("breakers:" + topic) }

// CoordChannel is the Redis coordinator's pub/sub channel: "members" (the
// membership changed), "leader" (a leader took over), "epoch" (assignments
// changed), "free" (a slot was released).
func (k Keyspace) CoordChannel() string { return k.ns + ":coord" }

// SlotKeys are the keys of one slot of one topic.
type SlotKeys struct {
	Store   string // zset: pending messages (score: due ms, priority, or retries left)
	Prepare string // zset: messages handed to a consumer (score: pop second*1000 + retries left)
	Retry   string // zset: failed messages waiting to retry (score: due ms*32 + retries left)
	Dead    string // zset: messages out of retries (score: time of death in ms)
	Owner   string // string: the slot's owner record (see RecordFence, TokenFence)
	Wake    string // sharded pub/sub channel: the slot's wake-ups on a Cluster (see WakeChannel)
}

// slotTag is the prefix of every key of slot i of topic, its hash tag included.
func (k Keyspace) slotTag(topic string, i int) string {
	return k.ns + ":{" + topic + ":" + strconv.Itoa(i) + "}:"
}

// slotKeySuffixes are the names' ends, in SlotKeys' order.
var slotKeySuffixes = [...]string{"store", "prepare", "retry", "dead", "owner", "wake"}

// Slot returns the keys of slot i of topic. The six names share one string
// (each a part of it): a process holding tens of thousands of slots keeps
// them all, and one allocation costs less than six.
func (k Keyspace) Slot(topic string, i int) SlotKeys {
	tag := k.slotTag(topic, i)
	size := 0
	for _, suffix := range slotKeySuffixes {
		size += len(tag) + len(suffix)
	}
	var b strings.Builder
	b.Grow(size)
	var names [len(slotKeySuffixes)]string
	start := 0
	for j, suffix := range slotKeySuffixes {
		b.WriteString(tag)
		b.WriteString(suffix)
		names[j] = b.String()[start:] // the Builder never moves what it wrote: Grow made room for all
		start = b.Len()
	}
	return SlotKeys{Store: names[0], Prepare: names[1], Retry: names[2], Dead: names[3], Owner: names[4], Wake: names[5]}
}

// OwnerKeys returns the owner record keys (SlotKeys.Owner) of slots 0..n-1
// of topic: all a coordinator keeps of a slot, without the other names,
// which a process holding tens of thousands of slots would keep twice.
func (k Keyspace) OwnerKeys(topic string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = k.slotTag(topic, i) + "owner"
	}
	return out
}

// Slots returns the keys of slots 0..n-1 of topic.
func (k Keyspace) Slots(topic string, n int) []SlotKeys {
	out := make([]SlotKeys, n)
	for i := range out {
		out[i] = k.Slot(topic, i)
	}
	return out
}
