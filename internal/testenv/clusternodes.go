package testenv

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ClusterNode is one line of CLUSTER NODES: a node as one member of the
// cluster sees it.
type ClusterNode struct {
	ID   string
	Addr string // host:port, without the bus port
	// Flags are the node's flags: myself, master, slave, fail, fail?, …
	Flags []string
	// MasterID is the id of the node's master; "" for a master.
	MasterID string
	// Slots are the hash slot ranges the node serves, both ends included.
	Slots []SlotRange
}

// SlotRange is a range of hash slots, both ends included.
type SlotRange struct{ First, Last int }

// String returns the range as CLUSTER NODES writes it.
func (r SlotRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(r.First)
	}
	return strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
}

// Has reports whether the node carries flag.
func (n ClusterNode) Has(flag string) bool { return slices.Contains(n.Flags, flag) }

// Serves reports whether the node is a master that is not flagged failed.
func (n ClusterNode) Serves() bool { return n.Has("master") && !n.Has("fail") }

// Owns reports whether the node's slots cover every slot of ranges.
func (n ClusterNode) Owns(ranges []SlotRange) bool {
	for _, want := range ranges {
		for s := want.First; s <= want.Last; s++ {
			if !n.OwnsSlot(s) {
				return false
			}
		}
	}
	return true
}

// OwnsSlot reports whether slot lies in one of the node's slot ranges.
func (n ClusterNode) OwnsSlot(slot int) bool {
	for _, r := range n.Slots {
		if r.First <= slot && slot <= r.Last {
			return true
		}
	}
	return false
}

// parseClusterNodes parses the reply of CLUSTER NODES. Slots being imported
// or migrated ("[…]") are left out.
func parseClusterNodes(reply string) ([]ClusterNode, error) {
	var nodes []ClusterNode
	for line := range strings.SplitSeq(strings.TrimSpace(reply), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: fewer than 8 fields", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := ClusterNode{ID: f[0], Addr: addr, Flags: strings.Split(f[2], ",")}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			first, last, isRange := strings.Cut(s, "-")
			a, err := strconv.Atoi(first)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES line %q: slot %q", line, s)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(last); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES line %q: slot %q", line, s)
				}
			}
			n.Slots = append(n.Slots, SlotRange{a, b})
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
