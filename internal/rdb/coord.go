package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coordination is the Redis I/O of the Redis coordinator: membership with a
// heartbeat judged by the Redis clock, the leader lease, assignments, and the
// slots' owner records (see the scripts join.lua … release.lua).
type Coordination interface {
	// Join registers worker id with its description for ttl; with update it
	// only rewrites the description of a live member. It returns the
	// membership's expiry, Unix ms by the Redis clock, or -1 when an update
	// finds the membership expired (gone for good), or ErrLocalPresence.
	Join(ctx context.Context, id string, ttl time.Duration, info string, update bool) (int64, error)
	// Heartbeat renews id's membership and leader lease (taking a free one
	// when lead), and, for the leader, drops expired members.
	Heartbeat(ctx context.Context, id string, ttl time.Duration, lead bool) (Beat, error)
	// Leave removes id's membership, description and leader lease.
	Leave(ctx context.Context, id string) error
	// Workers returns every member's description by id, expired or not.
	Workers(ctx context.Context) (map[string]string, error)
	// Alive reports, by the Redis clock, which of ids are still members.
	Alive(ctx context.Context, ids []string) ([]bool, error)
	// Assign writes assignments (topic → value) while id holds the leader
	// lease; it returns the new epoch, or -1 when id does not lead.
	Assign(ctx context.Context, id string, assignments map[string]string) (int64, error)
	// Assignments returns the stored assignment of each topic ("" for none).
	Assignments(ctx context.Context, topics []string) ([]string, error)
	// Owners returns the owner record of each slot, by its key
	// (SlotKeys.Owner, Keyspace.OwnerKeys; "" for none).
	Owners(ctx context.Context, owners []string) ([]string, error)
	// Claim takes each slot whose owner record is still the expected one;
	// records[i] is the new record if claimed, or the current one if it
	// already names id (an earlier attempt of the claim went through, its
	// reply lost, and the client sent it again), else "".
	Claim(ctx context.Context, id string, owners []string, expected []string) (records []string, err error)
	// Release hands back each slot whose record is still records[i]. When
	// some fail (their master out of reach, say) and others went through,
	// the error is an *EachError naming which.
	Release(ctx context.Context, owners []string, records []string) error
	// Announce publishes msg on the coordinator's channel.
	Announce(ctx context.Context, msg string) error
	// Listen follows the coordinator's channel until ctx ends, handing
	// deliver each *redis.Message and each (re)subscription
	// (*redis.Subscription; messages are lost across a reconnect). On a
	// Cluster it listens through two masters (listenChannels), so a message
	// may come twice and deliver may be called from two goroutines at once.
	Listen(ctx context.Context, deliver func(msg any))
	// Presence records me ("<coordinator>/<process id>") as consuming topics
	// of the namespace for ttl (mode "join", "renew" or "leave"; see
	// presence.lua) and returns the first neighbour that conflicts ("" for
	// none), and the Redis clock in µs (0 on "leave").
	Presence(ctx context.Context, me string, ttl time.Duration, mode string, topics ...string) (string, int64, error)
	// PresentWorkers returns every unexpired presence entry with its expiry.
	PresentWorkers(ctx context.Context) (map[string]time.Time, error)
}

// Beat is what one heartbeat learnt.
type Beat struct {
	NowMs      int64  // the Redis clock
	ExpiryMs   int64  // the renewed membership's expiry; -1: it had expired
	Leader     string // the leader's worker id ("" for none)
	LeaderLeft time.Duration
	Version    int64 // membership changes so far
	Epoch      int64 // assignment changes so far
	NextExpiry int64 // earliest expiry among the other members, Unix ms; -1 for none
}

// coordination implements Coordination on a go-redis client.
type coordination struct {
	rdb  redis.UniversalClient
	keys Keyspace
	topo *topology // the Cluster's; nil on a single node
	// slow holds the masters with a call of the owner records left running
	// (Owners, Claim, Release wait for a master at most MasterWait).
	slow masterGate
}

var _ Coordination = (*coordination)(nil)

// NewCoordination returns the Redis coordinator's I/O on rdb for the
// namespace of keys.
func NewCoordination(rdb redis.UniversalClient, keys Keyspace) Coordination {
	return &coordination{rdb: rdb, keys: keys, topo: topologyOf(rdb)}
}

// ErrLocalPresence: a join refused while a process of the local coordinator
// consumes the namespace, which it shares with nobody (presence.lua).
var ErrLocalPresence = errors.New("rmq: a process of the local coordinator consumes the namespace")

// Join implements Coordination.
func (c *coordination) Join(ctx context.Context, id string, ttl time.Duration, info string, update bool) (int64, error) {
	flag := "0"
	if update {
		flag = "1"
	}
	k := c.keys
	v, err := joinScript.Run(ctx, c.rdb, []string{k.Members(), k.Workers(), k.MembersVersion(), k.Presence()},
		id, ttl.Milliseconds(), info, k.CoordChannel(), flag).Int64Slice()
	if err != nil {
		c.topo.failed(err)
		return 0, err
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("rmq: join script returned %d values", len(v))
	}
	if v[1] == -2 {
		return 0, ErrLocalPresence
	}
	return v[1], nil
}

// Heartbeat implements Coordination.
func (c *coordination) Heartbeat(ctx context.Context, id string, ttl time.Duration, lead bool) (Beat, error) {
	flag := "0"
	if lead {
		flag = "1"
	}
	k := c.keys
	raw, err := heartbeatScript.Run(ctx, c.rdb, []string{k.Members(), k.Workers(), k.MembersVersion(), k.Leader(), k.Epoch()},
		id, ttl.Milliseconds(), k.CoordChannel(), flag).Slice()
	if err != nil {
		c.topo.failed(err)
		return Beat{}, err
	}
	if len(raw) != 7 {
		return Beat{}, fmt.Errorf("rmq: heartbeat script returned %d values", len(raw))
	}
	ints := make([]int64, 7)
	for i, r := range raw {
		if i == 2 {
			continue
		}
		n, ok := r.(int64)
		if !ok {
			return Beat{}, fmt.Errorf("rmq: heartbeat script returned %T at %d", r, i)
		}
		ints[i] = n
	}
	leader, _ := raw[2].(string)
	return Beat{NowMs: ints[0], ExpiryMs: ints[1], Leader: leader, LeaderLeft: time.Duration(ints[3]) * time.Millisecond,
		Version: ints[4], Epoch: ints[5], NextExpiry: ints[6]}, nil
}

// Leave implements Coordination.
func (c *coordination) Leave(ctx context.Context, id string) error {
	k := c.keys
	return leaveScript.Run(ctx, c.rdb, []string{k.Members(), k.Workers(), k.MembersVersion(), k.Leader()},
		id, k.CoordChannel()).Err()
}

// Workers implements Coordination, reading on the master (masterread.go).
func (c *coordination) Workers(ctx context.Context) (map[string]string, error) {
	return hashOnMaster(ctx, c.rdb, c.keys.Workers())
}

// Alive implements Coordination.
func (c *coordination) Alive(ctx context.Context, ids []string) ([]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	v, err := aliveScript.Run(ctx, c.rdb, []string{c.keys.Members()}, args...).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(v) != len(ids) {
		return nil, fmt.Errorf("rmq: alive script returned %d flags for %d workers", len(v), len(ids))
	}
	out := make([]bool, len(v))
	for i, f := range v {
		out[i] = f == 1
	}
	return out, nil
}

// Assign implements Coordination.
func (c *coordination) Assign(ctx context.Context, id string, assignments map[string]string) (int64, error) {
	k := c.keys
	keys := []string{k.Leader(), k.Epoch()}
	args := []any{id, k.CoordChannel()}
	for topic, v := range assignments {
		keys = append(keys, k.Assignment(topic))
		args = append(args, v)
	}
	return assignScript.Run(ctx, c.rdb, keys, args...).Int64()
}

// Assignments implements Coordination, reading on the master (masterread.go;
// one MGET, the keys sharing the namespace's hash tag).
func (c *coordination) Assignments(ctx context.Context, topics []string) ([]string, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	keys := make([]string, len(topics))
	for i, t := range topics {
		keys[i] = c.keys.Assignment(t)
	}
	p := NewRoutedPipeline(c.rdb)
	read := p.On(ctx, keys[0]).MGet(ctx, keys...)
	if err := p.Exec(ctx); err != nil {
		return nil, err
	}
	vals := read.Val()
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out, nil
}

// Owners implements Coordination. On a Cluster it waits for each master at
// most MasterWait: the records of one that did not answer read "" and
// fail with ErrUnanswered in the *EachError, the others are returned.
func (c *coordination) Owners(ctx context.Context, owners []string) ([]string, error) {
	p := NewRoutedPipeline(c.rdb).Bounded(&c.slow)
	cmds := make([]*redis.StringCmd, len(owners))
	on := make([]redis.Pipeliner, len(owners))
	for i, key := range owners {
		on[i] = p.On(ctx, key)
		cmds[i] = on[i].Get(ctx, key)
	}
	_ = p.Exec(ctx) // each command carries its own failure
	out := make([]string, len(owners))
	errs := make([]error, len(owners))
	for i, cmd := range cmds {
		switch {
		case !p.Answered(on[i]):
			errs[i] = ErrUnanswered // its call still fills cmd
		case cmd.Err() != nil && !errors.Is(cmd.Err(), redis.Nil):
			errs[i] = cmd.Err()
		default:
			out[i] = cmd.Val()
		}
	}
	return out, eachError(errs)
}

// Claim implements Coordination. On a Cluster it waits for each master at
// most MasterWait: a slot of one that did not answer reads "" (not
// claimed, as far as this call knows) with ErrUnanswered in the
// *EachError, as does one whose call failed.
func (c *coordination) Claim(ctx context.Context, id string, owners []string, expected []string) ([]string, error) {
	results, errs := runEachApart(ctx, c.rdb, &c.slow, claimScript, len(owners), func(i int) ([]string, []any) {
		return []string{owners[i]}, []any{expected[i], id}
	})
	out := make([]string, len(owners))
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		v, ok := r.([]any)
		if !ok || len(v) != 2 {
			return nil, fmt.Errorf("rmq: claim script returned %v", r)
		}
		won, _ := v[0].(int64)
		record, _ := v[1].(string)
		if _, holder, _ := strings.Cut(record, ":"); won == 1 || holder == id {
			out[i] = record // claimed now, or by an attempt whose reply was lost (a retry finds it)
		}
	}
	return out, eachError(errs)
}

// Release implements Coordination. On a Cluster it waits for each master
// at most MasterWait (ErrUnanswered in the *EachError).
func (c *coordination) Release(ctx context.Context, owners []string, records []string) error {
	_, errs := runEachApart(ctx, c.rdb, &c.slow, releaseScript, len(owners), func(i int) ([]string, []any) {
		return []string{owners[i]}, []any{records[i]}
	})
	return eachError(errs)
}

// Announce implements Coordination, through the coordinator's master
// (publishAt).
func (c *coordination) Announce(ctx context.Context, msg string) error {
	return publishAt(ctx, c.rdb, c.keys.Members(), c.keys.CoordChannel(), msg)
}

// Listen implements Coordination.
func (c *coordination) Listen(ctx context.Context, deliver func(msg any)) {
	listenChannels(ctx, c.rdb, c.topo, []string{c.keys.CoordChannel()}, deliver)
}

// Presence implements Coordination.
func (c *coordination) Presence(ctx context.Context, me string, ttl time.Duration, mode string, topics ...string) (string, int64, error) {
	keys := []string{c.keys.Presence(), c.keys.PresenceTopics()}
	if mode == "join" && strings.HasPrefix(me, "local/") {
		keys = append(keys, c.keys.Members()) // see presence.lua
	}
	v, err := presenceScript.Run(ctx, c.rdb, keys, me, ttl.Milliseconds(), mode, strings.Join(topics, ",")).Slice()
	if err != nil {
		return "", 0, err
	}
	if len(v) != 2 {
		return "", 0, fmt.Errorf("rmq: presence script returned %d values", len(v))
	}
	other, _ := v[0].(string)
	now, _ := v[1].(int64)
	return other, now, nil
}

// PresentWorkers implements Coordination: the entries and the clock that
// presence.lua stamps them by, both read on the master (masterread.go; a
// routed pipeline goes to it).
func (c *coordination) PresentWorkers(ctx context.Context) (map[string]time.Time, error) {
	p := NewRoutedPipeline(c.rdb)
	pipe := p.On(ctx, c.keys.Presence())
	entries := pipe.ZRangeWithScores(ctx, c.keys.Presence(), 0, -1)
	clock := pipe.Time(ctx)
	if err := p.Exec(ctx); err != nil {
		return nil, err
	}
	zs, now := entries.Val(), clock.Val()
	out := make(map[string]time.Time, len(zs))
	for _, z := range zs {
		if at := time.UnixMilli(int64(z.Score)); at.After(now) {
			m, _ := z.Member.(string)
			out[m] = at
		}
	}
	return out, nil
}

// runEachApart runs script n times in one routed pipeline (RoutedPipeline,
// Bounded by gate unless it is nil), with the keys and arguments args(i)
// gives call i, and returns the replies in order, each call's failure apart
// (nil where it went through; ErrUnanswered where its master did not answer
// in time). Scripts go as EVALSHA. The calls a master answered NOSCRIPT
// (it lost the script: a restart or failover) go again once, the first of
// each master's as EVAL, which stores the script there before the
// EVALSHAs behind it in the same pipeline run. Only those masters are sent
// the script, bounded as the first try: a reload through the client would
// go to every master and wait for each, one out of reach included.
func runEachApart(ctx context.Context, rdb redis.UniversalClient, gate *masterGate, script *redis.Script, n int,
	args func(i int) ([]string, []any)) ([]any, []error) {
	out := make([]any, n)
	errs := make([]error, n)
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		p := NewRoutedPipeline(rdb).Bounded(gate)
		cmds := make([]*redis.Cmd, len(todo))
		on := make([]redis.Pipeliner, len(todo))
		sent := map[redis.Pipeliner]bool{} // the masters sent the script
		for j, i := range todo {
			keys, a := args(i)
			on[j] = p.On(ctx, keys[0])
			if attempt > 0 && !sent[on[j]] {
				sent[on[j]] = true
				cmds[j] = script.Eval(ctx, on[j], keys, a...)
				continue
			}
			cmds[j] = script.EvalSha(ctx, on[j], keys, a...)
		}
		_ = p.Exec(ctx) // errors are read per command below
		var again []int
		for j, cmd := range cmds {
			if !p.Answered(on[j]) {
				errs[todo[j]] = ErrUnanswered // its call still fills cmd
				continue
			}
			err := cmd.Err()
			switch {
			case err == nil:
				out[todo[j]] = cmd.Val()
			case redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0:
				again = append(again, todo[j])
			default: // Exec asked for a reload of the slot map if err says it is stale
				errs[todo[j]] = err
			}
		}
		todo = again
	}
	return out, errs
}
