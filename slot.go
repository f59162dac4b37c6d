package rmq

import (
	"hash/crc32"
	"unsafe"
)

// SlotIndex returns the slot of a message with slot basis basis in a topic of
// slotAmount slots (a power of two): IEEE CRC32 of the basis, modulo
// slotAmount. Messages with one basis always share a slot, so one goroutine
// in the whole cluster consumes them, one at a time.
func SlotIndex(basis []byte, slotAmount int) int {
	return int(crc32.ChecksumIEEE(basis) & uint32(slotAmount-1))
}

// slotOf returns the slot of content with an optional string basis.
func slotOf(content []byte, basis string, slotAmount int) int {
	if basis == "" {
		return SlotIndex(content, slotAmount)
	}
	return SlotIndex(unsafe.Slice(unsafe.StringData(basis), len(basis)), slotAmount)
}
