package rdb

import "strconv"

// Wake names the slot a stored entry filled, for the wake-up that follows
// it: consumers listen on the topic's wake channel (Keyspace.WakeChannel) for
// "slot:dueMs,…", one publication per topic and write.
type Wake struct {
	Channel string // the topic's wake channel; "" for no wake-up
	Shard   string // the slot's sharded wake channel (SlotKeys.Wake)
	Slot    int
	DueMs   int64 // when the entry is due, in ms; 0 for "due now"
}

// WakePublications builds one wake-up per channel: "slot:dueMs,…" with the
// earliest due time per slot, slots in order of first appearance.
func WakePublications(wakes []Wake) []Publication {
	var ws wakeSet
	ws.reset()
	for _, w := range wakes {
		ws.add(w)
	}
	pubs, _ := ws.appendPublications(nil, nil)
	return pubs
}

// entryWakes returns the wake-ups of entries, the payloads written into buf;
// ws, pubs and buf are reused. The payloads stay valid until buf is reused.
func entryWakes(ws *wakeSet, entries []Entry, pubs []Publication, buf []byte) ([]Publication, []byte) {
	ws.reset()
	for i := range entries {
		ws.add(entries[i].Wake)
	}
	return ws.appendPublications(pubs, buf)
}

// wakeSet keeps the earliest due time per (channel, slot), in order of first
// appearance: a linear scan while small, a map index beyond. A set reused
// through reset allocates nothing once its buffers have grown.
type wakeSet struct {
	list  []wakeItem
	index map[wakeKey]int // in use when not empty; kept across resets for its buckets
}

type wakeKey struct {
	channel string
	slot    int
}

type wakeItem struct {
	Wake
	done bool // already written into a payload
}

// reset empties the set, keeping its buffers.
func (s *wakeSet) reset() {
	s.list = s.list[:0]
	clear(s.index)
}

// add gathers one wake-up; one without a channel is ignored.
func (s *wakeSet) add(w Wake) {
	if w.Channel == "" {
		return
	}
	i := -1
	if len(s.index) > 0 {
		if j, ok := s.index[wakeKey{w.Channel, w.Slot}]; ok {
			i = j
		}
	} else {
		for j := range s.list {
			if s.list[j].Slot == w.Slot && s.list[j].Channel == w.Channel {
				i = j
				break
			}
		}
	}
	if i >= 0 {
		s.list[i].DueMs = min(s.list[i].DueMs, w.DueMs)
		return
	}
	s.list = append(s.list, wakeItem{Wake: w})
	switch {
	case len(s.index) > 0:
		s.index[wakeKey{w.Channel, w.Slot}] = len(s.list) - 1
	case len(s.list) > 32:
		if s.index == nil {
			s.index = make(map[wakeKey]int, 2*len(s.list))
		}
		for j, o := range s.list {
			s.index[wakeKey{o.Channel, o.Slot}] = j
		}
	}
}

// appendPublications appends one publication per channel gathered to pubs,
// the payloads written into buf (reset first); it returns both for reuse.
// A publication's sharded channel is that of the first slot it names.
func (s *wakeSet) appendPublications(pubs []Publication, buf []byte) ([]Publication, []byte) {
	buf = buf[:0]
	for i, w := range s.list {
		if w.done {
			continue
		}
		start := len(buf)
		for j := i; j < len(s.list); j++ { // every slot of this channel, in order of appearance
			if o := &s.list[j]; o.Channel == w.Channel {
				if j > i {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(o.Slot), 10)
				buf = append(buf, ':')
				buf = strconv.AppendInt(buf, o.DueMs, 10)
				o.done = true
			}
		}
		pubs = append(pubs, Publication{Channel: w.Channel, Shard: w.Shard, Payload: buf[start:len(buf):len(buf)]})
	}
	return pubs, buf
}
