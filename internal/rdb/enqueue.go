package rdb

import (
	"bytes"
	"context"
	"hash/maphash"

	"github.com/redis/go-redis/v9"
)

// zaddGroup is one ZADD of several members to one key.
type zaddGroup struct {
	key     string
	nx      bool
	members []redis.Z
	entries []int          // indexes into the entries passed to Enqueue
	seen    map[uint64]int // member hash → index in members
}

// Enqueue implements Broker. Entries for one key become one multi-member ZADD
// with each member once: for NX the first copy's score, else the last copy's,
// exactly as separate commands in order would leave it. On a single node the
// publications ride in the same pipeline, after the ZADDs on one connection;
// on a cluster they are sent after the pipeline returns, since the pipeline's
// commands go to several nodes in no fixed order.
func (b *redisBroker) Enqueue(ctx context.Context, entries []Entry, pubs []Publication) ([]error, error) {
	groups := groupEntries(entries)
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(groups))
	for i, g := range groups {
		if g.nx {
			cmds[i] = pipe.ZAddNX(ctx, g.key, g.members...)
		} else {
			cmds[i] = pipe.ZAdd(ctx, g.key, g.members...)
		}
	}
	var pubCmds []*redis.IntCmd
	if !b.cluster {
		for _, p := range pubs {
			pubCmds = append(pubCmds, pipe.Publish(ctx, p.Channel, p.Payload))
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below

	var errs []error
	stored := false
	for i, g := range groups {
		err := cmds[i].Err()
		if err == nil {
			stored = true
			continue
		}
		if errs == nil {
			errs = make([]error, len(entries))
		}
		for _, e := range g.entries {
			errs[e] = err
		}
	}
	var pubErr error
	for _, c := range pubCmds {
		if err := c.Err(); err != nil && pubErr == nil {
			pubErr = err
		}
	}
	if b.cluster && stored {
		for _, p := range pubs {
			if err := b.rdb.Publish(ctx, p.Channel, p.Payload).Err(); err != nil && pubErr == nil {
				pubErr = err
			}
		}
	}
	return errs, pubErr
}

// groupEntries gathers entries per key, in order of first appearance.
func groupEntries(entries []Entry) []*zaddGroup {
	groups := make([]*zaddGroup, 0, 8)
	var byKey map[string]*zaddGroup // once there are many groups
	for i, e := range entries {
		var g *zaddGroup
		if byKey != nil {
			g = byKey[e.Key]
		} else {
			for _, c := range groups {
				if c.key == e.Key {
					g = c
					break
				}
			}
		}
		if g == nil || g.nx != e.NX {
			g = &zaddGroup{key: e.Key, nx: e.NX}
			groups = append(groups, g)
			if byKey == nil && len(groups) > linearFind {
				byKey = make(map[string]*zaddGroup, 2*len(groups))
				for _, c := range groups {
					byKey[c.key] = c
				}
			} else if byKey != nil {
				byKey[e.Key] = g
			}
		}
		g.entries = append(g.entries, i)
		if j := g.find(e.Member); j >= 0 {
			if !e.NX {
				g.members[j].Score = e.Score
			}
			continue
		}
		g.members = append(g.members, redis.Z{Score: e.Score, Member: e.Member})
	}
	return groups
}

// linearFind is the group size up to which duplicates are found by scanning.
const linearFind = 16

// find returns the index of member in g, or -1, and records a new member
// for later lookups (a hash index once the group outgrows a linear scan).
func (g *zaddGroup) find(member []byte) int {
	n := len(g.members)
	if n < linearFind {
		for j := range n {
			if bytes.Equal(g.members[j].Member.([]byte), member) {
				return j
			}
		}
		return -1
	}
	if g.seen == nil {
		g.seen = make(map[uint64]int, 2*n)
		for j := range n {
			g.seen[maphash.Bytes(memberSeed, g.members[j].Member.([]byte))] = j
		}
	}
	h := maphash.Bytes(memberSeed, member)
	if j, ok := g.seen[h]; ok && bytes.Equal(g.members[j].Member.([]byte), member) {
		return j
	}
	g.seen[h] = n // the caller appends member at index n
	return -1
}

var memberSeed = maphash.MakeSeed()

// Publish implements Broker.
func (b *redisBroker) Publish(ctx context.Context, channel, payload string) error {
	return b.rdb.Publish(ctx, channel, payload).Err()
}

// Subscribe implements Broker.
func (b *redisBroker) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return b.rdb.Subscribe(ctx, channels...)
}
