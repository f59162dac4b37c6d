package rdb

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
)

// retryWakes are the wake-ups of one topic that wait to be published again
// (wakeretry.go): the slots the failed publications named, each with its
// earliest due time, or every slot (WakeAll) once a payload could not be
// read or more than retryWakeSlots slots failed.
type retryWakes struct {
	all   bool
	slots map[int]int64 // slot → earliest due time, Unix ms
}

// retryWakeSlots is the most slots a published-again wake-up names; beyond,
// it wakes every slot of the topic (a payload stays within a few KiB).
const retryWakeSlots = 256

// merge adds the wake-ups of payload ("slot:dueMs,slot:dueMs,…" or
// WakeAll).
func (w *retryWakes) merge(payload []byte) {
	if w.all {
		return
	}
	if len(payload) == 0 {
		w.everySlot()
		return
	}
	for item := range bytes.SplitSeq(payload, []byte{','}) {
		slotStr, dueStr, ok := bytes.Cut(item, []byte{':'})
		slot, err1 := strconv.Atoi(string(slotStr))
		due, err2 := strconv.ParseInt(string(dueStr), 10, 64)
		if !ok || err1 != nil || err2 != nil || slot < 0 {
			w.everySlot() // WakeAll, or a payload of another kind
			return
		}
		if w.slots == nil {
			w.slots = make(map[int]int64)
		}
		if old, ok := w.slots[slot]; !ok || due < old {
			w.slots[slot] = due
		}
	}
	if len(w.slots) > retryWakeSlots {
		w.everySlot()
	}
}

func (w *retryWakes) everySlot() {
	w.all, w.slots = true, nil
}

// payload returns the wake-up to publish: the slots in order, or WakeAll.
func (w *retryWakes) payload() []byte {
	if w.all {
		return []byte(WakeAll)
	}
	var b []byte
	for i, s := range slices.Sorted(maps.Keys(w.slots)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, w.slots[s], 10)
	}
	return b
}
