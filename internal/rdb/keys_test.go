package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// OwnerKeys names the same keys as the slots' Owner.
func TestOwnerKeysAreTheSlotsOwners(t *testing.T) {
	ks := NewKeyspace("ns")
	owners, slots := ks.OwnerKeys("t", 16), ks.Slots("t", 16)
	for i, s := range slots {
		assert.Equal(t, s.Owner, owners[i])
	}
	assert.Equal(t, "ns:{t:3}:owner", owners[3])
}
