package rdb

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxRetries is how often a failed message is retried before it goes to the
// dead set. Store scores 0..MaxRetries mean "retries left, due now", which is
// why priorities start above it.
const MaxRetries = 16

// Action says how a delivered message is settled.
type Action uint8

// The actions. The consumer decides which; how each is written to Redis is
// this package's business.
const (
	// Commit drops the delivery: the listener succeeded.
	Commit Action = iota + 1
	// Rollback spends a retry: the message waits out the retry backoff (see
	// RetryWaits), or goes to the dead set when none is left.
	Rollback
	// Restore puts a message never handed to a listener back as it was: its
	// original store score, no retry spent.
	Restore
)

// Delivery is one message a cycle moved from store to prepare, with what
// settling it needs.
type Delivery struct {
	Member []byte
	// RetriesLeft is MaxRetries on a first delivery, 0 on the last.
	RetriesLeft int
	// Priority is the priority of a first delivery on a Priority topic (else 0).
	Priority int64
	// DueMs is when a first delivery on a time topic became due, Unix ms (else 0).
	DueMs int64

	prepare int64  // the prepare score the pop wrote
	score   string // the store score it had, exactly as Redis printed it
}

// Settle returns the outcome that settles d with a.
func (d *Delivery) Settle(a Action) Outcome {
	return Outcome{member: d.Member, prepare: d.prepare, action: a, score: d.score}
}

// Outcome settles one delivery with the next cycle of its slot (see
// Delivery.Settle).
type Outcome struct {
	member  []byte
	prepare int64
	action  Action
	score   string
}

// Action returns how the outcome settles its delivery.
func (o Outcome) Action() Action { return o.action }

// RetryWaits is the retry backoff in the form the cycle script reads: the
// waits before retries 1..MaxRetries. Build it once per client.
type RetryWaits string

// NewRetryWaits encodes wait(1..MaxRetries); negative waits count as none.
func NewRetryWaits(wait func(retry int) time.Duration) RetryWaits {
	ms := make([]string, MaxRetries)
	for i := range ms {
		// Rounded up: a wait's fraction of a millisecond must not bring
		// its retry early (600 µs as 0 would retry at once).
		w := max(wait(i+1), 0)
		n := int64(w / time.Millisecond)
		if w%time.Millisecond > 0 {
			n++
		}
		ms[i] = strconv.FormatInt(n, 10)
	}
	return RetryWaits(strings.Join(ms, ","))
}

// Fence is what a consumer shows the slot's owner record (KEYS owner of
// cycle.lua) with every cycle: the cycle settles and pops only while the
// record says the caller holds the slot. The zero Fence is unfenced.
type Fence struct {
	token  int64
	record string
}

// TokenFence holds the slot unless the record carries a higher token; a
// higher token than the record's becomes the record (the ZooKeeper
// coordinator's tokens, which Redis first learns from the pops). Token 0 is
// unfenced.
func TokenFence(token int64) Fence { return Fence{token: token} }

// RecordFence holds the slot only while the owner record is exactly record
// (the Redis coordinator's claims, written before the first pop).
func RecordFence(record string) Fence { return Fence{record: record} }

func (f Fence) arg() string {
	if f.record != "" {
		return "=" + f.record
	}
	return strconv.FormatInt(f.token, 10)
}

// String returns the fence as the cycle script receives it.
func (f Fence) String() string { return f.arg() }

// The flags of cycle.lua's ARGV (see its header).
const (
	orderDue, orderPriority = "t", "p" // due scores lowest first; highest score first
	mergeKeepFirst          = "m"      // a restore keeps the lower score (RangeMerge)
	mergeNever              = "n"      // a restore never overwrites a newer copy
	actCommit, actRollback  = "c", "r"
	actRestore              = "s" // followed by the original store score
)

// CycleRequest is one call of the cycle script.
type CycleRequest struct {
	Priority  bool          // pop highest score first (else due scores, lowest first)
	KeepFirst bool          // a restore keeps the lower score (RangeMerge)
	Max       int           // messages to pop; 0 only settles
	Timeout   time.Duration // consume timeout, whole seconds
	Fence     Fence         // who the caller is to the slot's owner record
	Waits     RetryWaits    // the retry backoff
	// Ahead also pops messages due within this long after now (due order
	// only; whole ms). Each goes to prepare counting its consume timeout from
	// its due second, and the caller hands it over at its due time.
	Ahead    time.Duration
	Outcomes []Outcome
}

// CycleResult is what one cycle returned.
type CycleResult struct {
	NowUs   int64  // Redis time when the script ran, in µs (0: the slot was empty)
	NowMs   int64  // the same in ms
	NextMs  int64  // when the slot next needs a look; -1 never
	Refused bool   // the caller does not hold the slot; nothing settled or popped
	Owner   string // the owner record then ("" for none)
	// HeldBack: the pop left a content within reach in store, since a copy
	// of it is in prepare (one popped ahead, held): it can go once that copy
	// is settled, which NextMs does not tell.
	HeldBack   bool
	Deliveries []Delivery
}

// Cycle implements Broker.
func (b *redisBroker) Cycle(ctx context.Context, keys SlotKeys, req *CycleRequest) (CycleResult, error) {
	raw, err := cycleScript.Run(ctx, b.rdb, keys.cycleKeys(), cycleArgs(req)...).Slice()
	return b.cycleResult(raw, err, req.Priority)
}

// cycleResult decodes a cycle call's reply, or returns its failure after
// asking for a reload of a Cluster's slot map if the failure says it is stale.
func (b *redisBroker) cycleResult(raw []any, err error, priority bool) (CycleResult, error) {
	if err != nil {
		b.topo.failed(err)
		return CycleResult{}, err
	}
	return parseCycle(raw, priority)
}

// cycleKeys are the KEYS of the cycle script on the slot.
func (k SlotKeys) cycleKeys() []string {
	return []string{k.Store, k.Prepare, k.Retry, k.Dead, k.Owner}
}

// cycleArgs are the ARGV of the cycle script for req.
func cycleArgs(req *CycleRequest) []any {
	order, merge := orderDue, mergeNever
	if req.Priority {
		order = orderPriority
	}
	if req.KeepFirst {
		merge = mergeKeepFirst
	}
	ahead := int64(0)
	if !req.Priority {
		ahead = req.Ahead.Milliseconds()
	}
	args := make([]any, 0, 9+3*len(req.Outcomes))
	args = append(args, order, merge, req.Max, int64(req.Timeout/time.Second), req.Fence.arg(), string(req.Waits),
		ahead)
	return appendOutcomes(args, req.Outcomes)
}

// appendOutcomes appends the outcomes to the script's arguments: their count
// and a triple each, or, when all are commits of members of one pop (one prepare
// score), "=<count>", the score and the members alone.
func appendOutcomes(args []any, outs []Outcome) []any {
	if onePopCommits(outs) {
		args = append(args, "="+strconv.Itoa(len(outs)), outs[0].prepare)
		ms := make([][]byte, len(outs))
		for i, o := range outs {
			ms[i] = o.member
		}
		// In byte order, as prepare keeps the entries of one score: the
		// script then sees in one pass that they are all of them.
		slices.SortFunc(ms, bytes.Compare)
		for _, m := range ms {
			args = append(args, m)
		}
		return args
	}
	args = append(args, len(outs))
	for _, o := range outs {
		args = append(args, o.member, o.prepare, actionArg(o))
	}
	return args
}

// onePopCommits reports whether outs are commits of members popped with one
// prepare score (at least one).
func onePopCommits(outs []Outcome) bool {
	for _, o := range outs {
		if o.action != Commit || o.prepare != outs[0].prepare {
			return false
		}
	}
	return len(outs) > 0
}

// actionArg encodes an outcome's action for cycle.lua.
func actionArg(o Outcome) string {
	switch o.action {
	case Commit:
		return actCommit
	case Rollback:
		return actRollback
	default:
		return actRestore + o.score
	}
}
