package rdb

import "strconv"

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
// the earliest due time per slot in Unix ms, 0 for "due now".
func (k Keyspace) WakeChannel(topic string) string { return k.ns + ":wake:" + topic }

// SlotKeys are the keys of one slot of one topic.
type SlotKeys struct {
	Store   string // zset: pending messages (score: due ms, priority, or retries left)
	Prepare string // zset: messages handed to a consumer (score: pop second*1000 + retries left)
	Retry   string // zset: failed messages waiting to retry (score: due ms*32 + retries left)
	Dead    string // zset: messages out of retries (score: time of death in ms)
	Owner   string // string: fencing token of the slot's current owner
}

// Slot returns the keys of slot i of topic.
func (k Keyspace) Slot(topic string, i int) SlotKeys {
	tag := k.ns + ":{" + topic + ":" + strconv.Itoa(i) + "}:"
	return SlotKeys{
		Store:   tag + "store",
		Prepare: tag + "prepare",
		Retry:   tag + "retry",
		Dead:    tag + "dead",
		Owner:   tag + "owner",
	}
}

// Slots returns the keys of slots 0..n-1 of topic.
func (k Keyspace) Slots(topic string, n int) []SlotKeys {
	out := make([]SlotKeys, n)
	for i := range out {
		out[i] = k.Slot(topic, i)
	}
	return out
}
