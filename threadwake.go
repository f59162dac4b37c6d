package rmq

import "time"

// A thread's wake-ups: producers announce a slot's message due at a time of
// the Redis clock (wake.go); the thread looks at the slot then, by its own
// clock (dueAt), or within the sweep interval if that is sooner (wokenFor).

// wake announces that slot has a message due at dueMs (0: now).
func (t *thread) wake(slot int, dueMs int64) {
	t.mu.Lock()
	if t.wakes == nil {
		t.wakes = make(map[int]int64)
	}
	if d, ok := t.wakes[slot]; !ok || dueMs < d {
		t.wakes[slot] = dueMs
	}
	t.mu.Unlock()
	t.poke()
}

// applyWakes applies the wake-ups of the inbox, slot → earliest due time.
func (t *thread) applyWakes(wakes map[int]int64) {
	now := time.Now()
	for slot, due := range wakes {
		s := t.slots[slot]
		if s == nil {
			continue
		}
		at, known := t.dueAt(s, due)
		if !known {
			// Its master's clock not read yet: a look at once reads it,
			// and times the next look by it (nextLook).
			at = now
		}
		if s.busy != nil && (s.wokeBusy.IsZero() || at.Before(s.wokeBusy)) {
			// The pop may have looked before this wake-up's message was
			// stored, and its result would park the slot or set a later look.
			s.wokeBusy = at
		}
		if at.Before(s.next) {
			t.wokenFor(s, at, now)
		}
	}
}

// dueAt returns when, by this process's clock, s's master's clock reads ms
// (a wake-up's due time): by the skew s's pops read, or on a single node by
// the client's (its presence calls read the same clock); false on a Cluster
// until a pop of s has read its master's clock (an empty slot's does not:
// it costs one command), since masters' clocks may differ.
func (t *thread) dueAt(s *slotState, ms int64) (time.Time, bool) {
	if s.skewKnown {
		return localTime(ms, s.skew), true
	}
	return t.sub.c.clock.local(ms), !t.sub.c.multiNode
}

// wokenFor makes s look at its woken message's due time at, or within the
// sweep interval if that is sooner: a slot taken out of the parked ones for
// a message due later would otherwise go without the sweep's safety net
// until then, and one whose next message's wake-up is lost (its producer
// died between the write and the publication) would wait that long.
func (t *thread) wokenFor(s *slotState, at, now time.Time) {
	s.next, s.parked = minTime(at, now.Add(t.sub.c.cfg.sweepInterval(t.sub.c.multiNode))), false
}
