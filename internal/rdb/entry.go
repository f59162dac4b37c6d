package rdb

// The store scores of messages as they are sent (cycle.lua's header gives
// every score of every set): a time type's due time in ms, a Priority
// message's priority. The producer says what a message is; these say how
// it is stored.

// DueEntry is the store entry of a message of a time type due at dueMs,
// waking its slot's consumer for then. keepFirst (RangeMerge) adds it only
// if absent, so a copy keeps the first due time.
func DueEntry(key string, member []byte, dueMs int64, keepFirst bool, wake Wake) Entry {
	wake.DueMs = dueMs
	return Entry{Key: key, Score: float64(dueMs), Member: member, NX: keepFirst, Wake: wake}
}

// PriorityEntry is the store entry of a Priority message, due at once.
func PriorityEntry(key string, member []byte, priority int64, wake Wake) Entry {
	wake.DueMs = 0
	return Entry{Key: key, Score: float64(priority), Member: member, Wake: wake}
}
