package zookeeper

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
)

// The nodes keep the JSON they always had, so that workers of different
// versions, and an ensemble written by an earlier one, read each other.
func TestNodeJSON(t *testing.T) {
	owners := []coordinator.Owner{{Worker: "a", Thread: 0}, {}, {Worker: "b", Thread: 2}}
	const stored = `{"generation":7,"owners":[{"w":"a","t":0},{"w":"","t":0},{"w":"b","t":2}]}`

	out, err := encodeAssignment("t", 7, owners)
	require.NoError(t, err)
	assert.JSONEq(t, stored, string(out))

	var a assignmentNode
	require.NoError(t, json.Unmarshal([]byte(stored), &a))
	assert.Equal(t, int64(7), a.Generation)
	assert.Equal(t, owners, a.owners())
	assert.Nil(t, assignmentNode{}.owners(), "no assignment yet")

	out, err = json.Marshal(ownerNode{Worker: "w1", Thread: 3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"w":"w1","t":3}`, string(out))
}

// A topic whose owners written in full would not fit a ZooKeeper node (1
// MiB: 65,536 slots of workers with long ids) is written compactly, and read
// back the same; one that fits is written in full, as versions that read
// only that form understand.
func TestLargeAssignmentFitsANode(t *testing.T) {
	const slots = 65536
	workers := []string{"orders-consumer-7d9f8b6c5d-x2kqp-3f9a1c", "orders-consumer-7d9f8b6c5d-m8zrt-77b0e2", ""}
	owners := make([]coordinator.Owner, slots)
	for i := range owners {
		if w := workers[i%len(workers)]; w != "" {
			owners[i] = coordinator.Owner{Worker: w, Thread: i % 16}
		}
	}
	out, err := encodeAssignment("big", 3, owners)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), maxNodeData)
	var a assignmentNode
	require.NoError(t, json.Unmarshal(out, &a))
	assert.Nil(t, a.Owners, "the compact form")
	assert.Equal(t, int64(3), a.Generation)
	assert.Equal(t, owners, a.owners())

	out, err = encodeAssignment("small", 1, owners[:1000])
	require.NoError(t, err)
	a = assignmentNode{}
	require.NoError(t, json.Unmarshal(out, &a))
	assert.Len(t, a.Owners, 1000, "written in full")
	assert.Equal(t, owners[:1000], a.owners())
}
