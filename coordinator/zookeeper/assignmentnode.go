package zookeeper

import (
	"encoding/json"
	"fmt"

	"github.com/rmq-go/rmq/coordinator"
)

// assignmentNode is the data of a topic's assignment node: the owners by
// slot, each named in full, or, for a topic whose owners so written would
// not fit a node (maxNodeData: tens of thousands of slots), compactly, as
// the Redis coordinator stores them (coordinator.PackedOwners). Readers take
// either; the leader writes the first whenever it fits, which versions that
// read only it understand.
type assignmentNode struct {
	Generation int64                     `json:"generation"`
	Owners     []ownerNode               `json:"owners,omitempty"` // by slot
	Packed     *coordinator.PackedOwners `json:"packed,omitempty"`
}

// maxNodeData is how large an assignment node may be: ZooKeeper refuses a
// request over its jute.maxbuffer (1 MiB by default) by closing the
// connection; the margin is for the request's other fields.
const maxNodeData = 1000 * 1024

// encodeAssignment returns the data of an assignment node (owners by slot):
// in full if it fits maxNodeData, else compact, else an error.
func encodeAssignment(topic string, generation int64, owners []coordinator.Owner) ([]byte, error) {
	a := assignmentNode{Generation: generation, Owners: make([]ownerNode, len(owners))}
	for i, o := range owners {
		a.Owners[i] = ownerNode(o)
	}
	if len(owners) == 0 {
		a.Owners = nil
	}
	out, err := json.Marshal(a)
	if err != nil || len(out) <= maxNodeData {
		return out, err
	}
	packed := coordinator.PackOwners(owners)
	a.Owners, a.Packed = nil, &packed
	out, err = json.Marshal(a)
	if err == nil && len(out) > maxNodeData {
		err = fmt.Errorf("rmq: the assignment of topic %q (%d slots) takes %d bytes, over a ZooKeeper node's %d",
			topic, len(owners), len(out), maxNodeData)
	}
	return out, err
}

// owners decodes the assignment: owners by slot (nil for none).
func (a assignmentNode) owners() []coordinator.Owner {
	if a.Owners == nil && a.Packed == nil {
		return nil
	}
	if a.Owners != nil {
		out := make([]coordinator.Owner, len(a.Owners))
		for i, o := range a.Owners {
			out[i] = coordinator.Owner(o)
		}
		return out
	}
	return a.Packed.Owners()
}
