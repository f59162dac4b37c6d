package failover_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq"
)

// produce runs producer id until ctx ends: it sends on a clock, at
// sendRate/producers messages per second, each Send in a goroutine of its
// own (at most maxInFlight at once), so that a Send stuck on a dead master
// does not hold back the sends of other slots: what couples the slots is the
// library, not the harness. Message seq goes to slot seq % topicSlots. It
// returns once its last Send has.
func (r *failoverRun) produce(ctx context.Context, p *rmq.Producer, id int, seq *atomic.Int64) {
	interval := time.Second * producers / sendRate
	inFlight := make(chan struct{}, maxInFlight)
	var sends sync.WaitGroup
	defer sends.Wait()
	next := time.Now().Add(time.Duration(id) * interval / producers)
	for {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if ctx.Err() != nil {
			return
		}
		next = next.Add(interval)
		if time.Since(next) > 100*time.Millisecond {
			next = time.Now() // starved of CPU: go on from now rather than burst
		}
		select {
		case inFlight <- struct{}{}:
		default:
			r.rec.skip()
			continue
		}
		n := int(seq.Add(1))
		sends.Go(func() {
			defer func() { <-inFlight }()
			r.send(p, n)
		})
	}
}

// send sends message n ("m:<n>") to slot n % topicSlots, with a timeout of
// its own, and records the outcome.
func (r *failoverRun) send(p *rmq.Producer, n int) {
	slot := n % topicSlots
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	start := time.Now()
	err := p.Send(ctx, rmq.PriorityMessage{Topic: topicName, Content: []byte(content(n)),
		Priority: 100, SlotBasis: r.bases[slot]})
	r.rec.sent(sendRecord{seq: n, slot: slot, start: start, end: time.Now(), err: err})
}

// content is the content of message n.
func content(n int) string { return "m:" + strconv.Itoa(n) }

// slotBases returns for each slot i a slot basis whose slot is i.
func slotBases() [topicSlots]string {
	var bases [topicSlots]string
	found := 0
	for k := 0; found < topicSlots; k++ {
		b := "basis-" + strconv.Itoa(k)
		if i := rmq.SlotIndex([]byte(b), topicSlots); bases[i] == "" {
			bases[i] = b
			found++
		}
	}
	return bases
}
