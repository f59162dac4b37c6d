// Package keyslot computes the Redis Cluster hash slot of a key.
package keyslot

import "strings"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT computes
// it: CRC16 (XMODEM) modulo 16384 of the key's hash tag — the part between
// the first "{" and the first "}" after it, when that part is not empty — or
// of the whole key otherwise.
func Of(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % Count)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
