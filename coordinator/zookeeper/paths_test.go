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

	out, err := json.Marshal(newAssignmentNode(7, owners))
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
