package rmq

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
)

// wakeListener receives producers' wake-ups (see Keyspace.WakeChannel) and
// passes each (slot, due time) to the thread that holds the slot, so a due
// message reaches its listener within milliseconds while idle slots stay
// quiet. Pub/sub is lossy across reconnects, so every (re)subscription wakes
// every slot, and the idle sweep bounds what remains. On a Cluster the
// broker listens through two masters, so a dead one does not silence it,
// and producers publish to each slot's sharded channel instead, which the
// broker follows on the slot's master: a (re)subscription to one wakes its
// slot.
//
// The same connection follows the control channel, where changes of a
// topic's flow control are announced.
type wakeListener struct {
	c         *Client
	byChannel map[string]*subscription
	byShard   map[string]shardOf // a slot's sharded wake channel → the slot
	control   *controlWatcher
}

// shardOf is the slot whose sharded wake channel it is.
type shardOf struct {
	sub  *subscription
	slot int
}

func newWakeListener(c *Client, subs map[string]*subscription, control *controlWatcher) *wakeListener {
	w := &wakeListener{c: c, byChannel: make(map[string]*subscription, len(subs)),
		byShard: make(map[string]shardOf), control: control}
	for _, s := range subs {
		w.byChannel[s.topic.wake] = s
		if c.broker.ShardedWakes() {
			for i, keys := range s.topic.slots {
				w.byShard[keys.Wake] = shardOf{s, i}
			}
		}
	}
	return w
}

// run listens until ctx ends.
func (w *wakeListener) run(ctx context.Context) {
	if len(w.byChannel) == 0 {
		return
	}
	control := w.c.keys.ControlChannel()
	channels := make([]string, 0, len(w.byChannel)+1)
	channels = append(channels, control)
	for ch := range w.byChannel {
		channels = append(channels, ch)
	}
	shards := make([]string, 0, len(w.byShard))
	for ch := range w.byShard {
		shards = append(shards, ch)
	}
	w.c.broker.Listen(ctx, channels, shards, func(msg any) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if s := w.byChannel[m.Channel]; s != nil && m.Kind == "subscribe" {
				s.wakeAll()
			}
			if sh, ok := w.byShard[m.Channel]; ok && m.Kind == "ssubscribe" {
				sh.sub.wakeSlot(sh.slot)
			}
			if m.Channel == control && m.Kind == "subscribe" {
				w.control.poke()
			}
		case *redis.Message:
			if s := w.byChannel[m.Channel]; s != nil {
				s.wakeSlots(m.Payload)
			} else if sh, ok := w.byShard[m.Channel]; ok {
				sh.sub.wakeSlots(m.Payload)
			} else if m.Channel == control {
				w.control.poke()
			}
		}
	})
}

// wakeSlots routes a payload "slot:dueMs,slot:dueMs,…" to the slots' threads;
// an item "*" (rdb.WakeAll: the failed wake-ups of many slots, published
// again) wakes them all.
func (s *subscription) wakeSlots(payload string) {
	for item := range strings.SplitSeq(payload, ",") {
		if item == rdb.WakeAll { // failed wake-ups published again
			s.wakeAll()
			continue
		}
		slotStr, dueStr, ok := strings.Cut(item, ":")
		if !ok {
			continue
		}
		slot, err1 := strconv.Atoi(slotStr)
		due, err2 := strconv.ParseInt(dueStr, 10, 64)
		if err1 != nil || err2 != nil || slot < 0 || slot >= len(s.holders) {
			continue
		}
		if t := s.holders[slot].Load(); t != nil {
			t.wake(slot, due)
		}
	}
}

// wakeAll makes every held slot of s look at Redis at once.
func (s *subscription) wakeAll() {
	for slot := range s.holders {
		s.wakeSlot(slot)
	}
}

// wakeSlot makes slot, if held, look at Redis at once.
func (s *subscription) wakeSlot(slot int) {
	if t := s.holders[slot].Load(); t != nil {
		t.wake(slot, 0)
	}
}
