package rdb

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxPipeline is the most entries stored in one pipeline.
const maxPipeline = 512

// sendPipe is the strategy of go-redis pipelines: Cluster and Ring clients,
// clients whose options the stream cannot honour, and WithSendStream(false).
// Each write is one pipeline through the go-redis client (its hooks, pool
// and retries included): a ZADD per key, then the wake-ups (see store).
type sendPipe struct {
	b *redisBroker
}

// pipeScratch is the memory one pipeline reuses from the last.
type pipeScratch struct {
	entries []Entry
	wakes   wakeSet
	pubs    []Publication
	payload []byte // the wake-ups' payloads
}

var scratchPool = sync.Pool{New: func() any { return new(pipeScratch) }}

// write implements strategy.
func (p *sendPipe) write(batch []*request) {
	sc := scratchPool.Get().(*pipeScratch)
	for _, r := range batch {
		sc.entries = append(sc.entries, r.entry)
	}
	errs, _ := p.b.store(context.Background(), sc.entries, nil, sc)
	clear(sc.entries)
	sc.entries = sc.entries[:0]
	scratchPool.Put(sc)
	for i, r := range batch {
		var err error
		if errs != nil {
			err = errs[i]
		}
		r.finish(err)
	}
}

// duplex implements strategy: a pipeline returns with its replies.
func (p *sendPipe) duplex() bool { return false }

// inFlight implements strategy; the sender asks only duplex strategies.
func (p *sendPipe) inFlight() bool { return false }

// retryAfter implements strategy: no retries of its own, since the go-redis
// client retries its pipelines itself.
func (p *sendPipe) retryAfter(error, int) (time.Duration, bool) { return 0, false }

// close implements strategy: nothing of its own to close.
func (p *sendPipe) close(context.Context) {}

// errNotSent is the outcome of the entries of an Enqueue left unsent because
// an earlier pipeline of it failed.
var errNotSent = errors.New("rdb: not sent: an earlier pipeline of the batch failed")

// Enqueue implements Broker.
func (b *redisBroker) Enqueue(ctx context.Context, entries []Entry, pubs []Publication) ([]error, error) {
	var errs []error
	var pubErr error
	for start := 0; start == 0 || start < len(entries); start += maxPipeline {
		end := min(start+maxPipeline, len(entries))
		var after []Publication
		if end == len(entries) {
			after = pubs
		}
		sc := scratchPool.Get().(*pipeScratch)
		chunkErrs, err := b.store(ctx, entries[start:end], after, sc)
		scratchPool.Put(sc)
		if pubErr == nil {
			pubErr = err
		}
		if chunkErrs != nil {
			if errs == nil {
				errs = make([]error, len(entries))
			}
			copy(errs[start:], chunkErrs)
		}
		rest := ctx.Err()
		if !allStored(chunkErrs) {
			rest = errNotSent
		}
		if rest == nil || end == len(entries) {
			continue // a pipeline stored but not acknowledged (ErrNotReplicated) goes on
		}
		if errs == nil {
			errs = make([]error, len(entries))
		}
		for i := end; i < len(entries); i++ {
			errs[i] = rest
		}
		break
	}
	return errs, pubErr
}

// allStored reports whether every outcome of errs (nil: all) says stored.
func allStored(errs []error) bool {
	for _, err := range errs {
		if !Stored(err) {
			return false
		}
	}
	return true
}

// zaddGroup is one ZADD of several members to one key.
type zaddGroup struct {
	key     string
	nx      bool
	asking  bool // behind ASKING (Entry.Asking)
	members []redis.Z
	entries []int          // indexes into the entries passed to store
	seen    map[uint64]int // member hash → index in members
}

// store adds entries in one pipeline, then publishes their wake-ups and pubs;
// it counts the entries stored, and a failed publication is logged and
// published again (wakeOutcome.failedOn, in storeOn). sc is memory
// to reuse, given back clean. It returns nil when every entry was stored,
// else one error per entry (nil where that entry was stored), and the first
// failed publication's error. On a Cluster the entries go to their masters
// in parallel (storeCluster).
func (b *redisBroker) store(ctx context.Context, entries []Entry, pubs []Publication, sc *pipeScratch) ([]error, error) {
	if b.topo != nil {
		return b.storeCluster(ctx, entries, pubs)
	}
	return b.storeOn(ctx, b.rdb, entries, pubs, sc)
}

// pipeliner is a client that makes pipelines: a single node's, or a
// Cluster's master's.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// storeOn adds entries in one pipeline of client, a single node: the ZADDs,
// WAIT if writes wait for replicas, then the wake-ups of the entries and
// pubs, all on one connection. It counts the entries stored; each failed
// publication is logged and published again (wakeOutcome.failedOn).
//
// Entries for one key become one multi-member ZADD with each member once: for
// NX the first copy's score, else the last copy's, exactly as separate
// commands in order would leave it.
func (b *redisBroker) storeOn(ctx context.Context, client pipeliner, entries []Entry, pubs []Publication, sc *pipeScratch) ([]error, error) {
	sc.pubs, sc.payload = entryWakes(&sc.wakes, entries, sc.pubs[:0], sc.payload)
	pubs = append(sc.pubs, pubs...)
	defer clear(sc.pubs[:cap(sc.pubs)])
	groups := groupEntries(entries)
	pipe := client.Pipeline()
	cmds := make([]*redis.IntCmd, len(groups))
	for i, g := range groups {
		if g.asking {
			pipe.Do(ctx, "asking") // a refusal shows in the ZADD's reply
		}
		if g.nx {
			cmds[i] = pipe.ZAddNX(ctx, g.key, g.members...)
		} else {
			cmds[i] = pipe.ZAdd(ctx, g.key, g.members...)
		}
	}
	var wait *redis.Cmd
	if b.ack.on() && len(groups) > 0 {
		wait = pipe.Do(ctx, "WAIT", b.ack.Replicas, b.ack.Timeout.Milliseconds())
	}
	pubCmds := make([]*redis.IntCmd, 0, len(pubs))
	for _, p := range pubs {
		pubCmds = append(pubCmds, b.publish(ctx, pipe, p))
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below

	var errs []error
	var verdict error // WAIT's, for the entries stored
	if wait != nil {
		acked, err := wait.Int64()
		verdict = b.ack.outcome(acked, err)
	}
	stored := int64(len(entries))
	for i, g := range groups {
		err := cmds[i].Err()
		if err == nil && verdict != nil {
			// stored, not acknowledged: counted as stored, failed all the same
			if errs == nil {
				errs = make([]error, len(entries))
			}
			for _, e := range g.entries {
				errs[e] = verdict
			}
			continue
		}
		if err == nil {
			continue
		}
		if errs == nil {
			errs = make([]error, len(entries))
		}
		for _, e := range g.entries {
			errs[e] = err
		}
		stored -= int64(len(g.entries))
	}
	b.counts.Sent.Add(stored)
	for i := range entries {
		if c := entries[i].Counted; c != nil && (errs == nil || Stored(errs[i])) {
			c.Add(1)
		}
	}
	var pubErr error
	for i, c := range pubCmds {
		if err := c.Err(); err != nil {
			if pubErr == nil {
				pubErr = err
			}
			b.wakes.failedOn(pubs[i].Channel, pubs[i].Payload, err)
		}
	}
	return errs, pubErr
}

// groupEntries gathers entries per key, in order of first appearance. An
// entry joins its key's latest group, or starts one where that group is
// behind ASKING and the entry is not (or the reverse): the groups of one key
// run in the order of their entries, as separate commands would.
func groupEntries(entries []Entry) []*zaddGroup {
	groups := make([]*zaddGroup, 0, 8)
	var byKey map[string]*zaddGroup // each key's latest group, once there are many groups
	for i, e := range entries {
		var g *zaddGroup
		if byKey != nil {
			g = byKey[e.Key]
		} else {
			for j := len(groups) - 1; j >= 0; j-- { // the latest, as byKey holds it
				if groups[j].key == e.Key {
					g = groups[j]
					break
				}
			}
		}
		if g == nil || g.nx != e.NX || g.asking != e.Asking {
			g = &zaddGroup{key: e.Key, nx: e.NX, asking: e.Asking}
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
