package testenv

import "github.com/rmq-go/rmq/internal/keyslot"

// KeySlot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT
// computes it (keyslot.Of).
func KeySlot(key string) int {
	return keyslot.Of(key)
}
