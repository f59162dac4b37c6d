package rmq

import (
	"strconv"

	"github.com/rmq-go/rmq/internal/rdb"
)

// wakePublications builds one wake-up per topic: "slot:dueMs,…" with the
// earliest due time per slot (0 for "due now").
func wakePublications(reqs []*sendReq) []rdb.Publication {
	var ws wakeSet
	pubs, _ := ws.publications(reqs, nil, nil)
	return pubs
}

// wakeSet keeps the earliest due time per (topic, slot), in order of first
// appearance: a linear scan while small, a map index beyond. A set reused
// through publications allocates nothing once its buffers have grown.
type wakeSet struct {
	list  []wakeItem
	index map[wakeKey]int // in use when not empty; kept across resets for its buckets
}

type wakeKey struct {
	topic *topicInfo
	slot  int
}

type wakeItem struct {
	topic *topicInfo
	slot  int
	due   int64
	done  bool // already written into a payload
}

// publications resets ws, gathers reqs, and appends their wake-ups to pubs,
// the payloads written into buf; it returns both for reuse. The payloads
// stay valid until buf is reused.
func (ws *wakeSet) publications(reqs []*sendReq, pubs []rdb.Publication, buf []byte) ([]rdb.Publication, []byte) {
	ws.list = ws.list[:0]
	clear(ws.index)
	for _, r := range reqs {
		ws.add(r.topic, r.slot, r.dueMs)
	}
	buf = buf[:0]
	for i, w := range ws.list {
		if w.done {
			continue
		}
		start := len(buf)
		for j := i; j < len(ws.list); j++ { // every slot of this topic, in order of appearance
			if o := &ws.list[j]; o.topic == w.topic {
				if j > i {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(o.slot), 10)
				buf = append(buf, ':')
				buf = strconv.AppendInt(buf, o.due, 10)
				o.done = true
			}
		}
		pubs = append(pubs, rdb.Publication{Channel: w.topic.wake, Payload: buf[start:len(buf):len(buf)]})
	}
	return pubs, buf
}

func (s *wakeSet) add(t *topicInfo, slot int, due int64) {
	i := -1
	if len(s.index) > 0 {
		if j, ok := s.index[wakeKey{t, slot}]; ok {
			i = j
		}
	} else {
		for j := range s.list {
			if s.list[j].topic == t && s.list[j].slot == slot {
				i = j
				break
			}
		}
	}
	if i >= 0 {
		s.list[i].due = min(s.list[i].due, due)
		return
	}
	s.list = append(s.list, wakeItem{topic: t, slot: slot, due: due})
	switch {
	case len(s.index) > 0:
		s.index[wakeKey{t, slot}] = len(s.list) - 1
	case len(s.list) > 32:
		if s.index == nil {
			s.index = make(map[wakeKey]int, 2*len(s.list))
		}
		for j, w := range s.list {
			s.index[wakeKey{w.topic, w.slot}] = j
		}
	}
}
