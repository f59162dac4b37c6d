package rdb

import (
	"strconv"
	"time"

	"github.com/rmq-go/rmq/internal/keyslot"
)

// Where a node sends a channel. The client's slot map is reloaded from a node
// picked at random, and the nodes other than those a migration told learn of
// a slot given away only by gossip, so the map may go on naming a moved
// slot's old master for a while, reload after reload. The old master itself
// knows better: it answers an SSUBSCRIBE of the slot's channels with MOVED
// and the new master's address. A sharded subscription whose node drops a
// channel (SUNSUBSCRIBE) therefore asks the node for it again, and a MOVED
// that answers any of its SSUBSCRIBEs is recorded; the loop then places the
// channels of that hash slot at the address it named until the slot map
// agrees, or for shardMovedTrust, after which the map rules again (were it
// still wrong, the next MOVED says so). A subscription that fails at such an
// address gives its channels back to the map at once.

// shardMovedTrust is how long a MOVED's address is preferred to the slot
// map's for the channels of its hash slot.
const shardMovedTrust = 30 * time.Second

// shardMove is a hash slot and the address of the master a MOVED named for it.
type shardMove struct {
	slot int
	addr string
}

// shardMoved is where a MOVED sent a channel, and when.
type shardMoved struct {
	addr string
	at   time.Time
}

// movedOf returns the hash slot and the address of a MOVED reply in err
// (false for any other error, an ASK, or a node that announces no address).
func movedOf(err error) (shardMove, bool) {
	field, addr, ask, ok := redirectSlotOf(err)
	if !ok || ask {
		return shardMove{}, false
	}
	slot, perr := strconv.Atoi(field)
	if perr != nil || slot < 0 || slot >= keyslot.Count {
		return shardMove{}, false
	}
	return shardMove{slot: slot, addr: addr}, true
}

// movedTo records that the node sent m.slot to m.addr and tells the loop.
func (s *shardSub) movedTo(m shardMove) {
	s.mu.Lock()
	s.moves = append(s.moves, m)
	s.mu.Unlock()
	s.tell()
}

// noteMoves records in moved, for each of s's channels in a hash slot that a
// MOVED named since the last call, the address it named.
func (s *shardSub) noteMoves(moved map[string]shardMoved, now time.Time) {
	s.mu.Lock()
	moves := s.moves
	s.moves = nil
	s.mu.Unlock()
	if len(moves) == 0 {
		return
	}
	// a resharding moves many hash slots at once: hash each channel once
	bySlot := make(map[int][]string, len(s.channels))
	for _, ch := range s.channels {
		slot := keyslot.Of(ch)
		bySlot[slot] = append(bySlot[slot], ch)
	}
	for _, m := range moves {
		if m.addr == s.addr {
			continue
		}
		for _, ch := range bySlot[m.slot] {
			moved[ch] = shardMoved{addr: m.addr, at: now}
		}
	}
}

// placeMoved returns where ch goes: the address a MOVED named for it while
// it is trusted and the slot map (which names mapAddr) does not yet agree,
// mapAddr otherwise (the MOVED then forgotten).
func placeMoved(moved map[string]shardMoved, ch, mapAddr string) string {
	m, ok := moved[ch]
	if !ok {
		return mapAddr
	}
	if m.addr == mapAddr || time.Since(m.at) >= shardMovedTrust {
		delete(moved, ch)
		return mapAddr
	}
	return m.addr
}

// forgetMoves gives back to the slot map the channels a MOVED sent to addr,
// whose subscription failed.
func forgetMoves(moved map[string]shardMoved, addr string) {
	for ch, m := range moved {
		if m.addr == addr {
			delete(moved, ch)
		}
	}
}
