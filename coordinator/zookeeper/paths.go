package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
)

// nodePaths names every node of one namespace:
//
//	<root>/<ns>/workers/<id>        ephemeral  workerNode: a live worker
//	<root>/<ns>/topics/<topic>      persistent topic definition (JSON, as in Redis)
//	<root>/<ns>/election/…n_<seq>   ephemeral sequential: lowest sequence leads
//	<root>/<ns>/assignment/<topic>  persistent assignmentNode, written by the leader
//	<root>/<ns>/owners/<topic>/<i>  ephemeral ownerNode: who holds slot i now;
//	                                its creation zxid is the fencing token
type nodePaths struct{ base string }

func newNodePaths(root, ns string) nodePaths { return nodePaths{base: root + "/" + ns} }

func (p nodePaths) workers() string                { return p.base + "/workers" }
func (p nodePaths) worker(id string) string        { return p.workers() + "/" + id }
func (p nodePaths) topics() string                 { return p.base + "/topics" }
func (p nodePaths) topic(name string) string       { return p.topics() + "/" + name }
func (p nodePaths) election() string               { return p.base + "/election" }
func (p nodePaths) assignments() string            { return p.base + "/assignment" }
func (p nodePaths) assignment(topic string) string { return p.assignments() + "/" + topic }
func (p nodePaths) owners(topic string) string     { return p.base + "/owners/" + topic }
func (p nodePaths) owner(topic string, slot int) string {
	return p.owners(topic) + "/" + strconv.Itoa(slot)
}

// workerNode is the data of a worker's node.
type workerNode struct {
	ID      string         `json:"id"`
	Host    string         `json:"host"`
	PID     int            `json:"pid"`
	Topics  map[string]int `json:"topics"`  // topic → threads
	Started int64          `json:"started"` // Unix ms
	// Declines lists per topic the slots the worker cannot serve now
	// (coordinator.Member.Declines). A worker that changes it bumps the
	// workers' node, so that the leader reads the descriptions again.
	Declines map[string][]int `json:"declines,omitempty"`
}

// ownerNode is the data of a slot's owner node, and one slot of an
// assignment node.
type ownerNode struct {
	Worker string `json:"w"`
	Thread int    `json:"t"`
}

// checkNodeName accepts names usable as one path component, by ZooKeeper's
// rules: not . or .., no '/', and none of the characters it refuses in a
// path (controls, surrogates and private use, U+FFF0..U+FFFF).
func checkNodeName(s string) error {
	if s == "" || s == "." || s == ".." || len(s) > 200 {
		return errors.New(`must be 1 to 200 characters, and not "." or ".."`)
	}
	if strings.Contains(s, "/") {
		return errors.New("must not contain '/'")
	}
	if !utf8.ValidString(s) {
		return errors.New("must be UTF-8")
	}
	for _, r := range s {
		if r <= 0x1f || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("must not contain %U, which ZooKeeper refuses in a path", r)
		}
	}
	return nil
}

// ensurePath creates path and its parents as persistent nodes when missing.
func ensurePath(conn *zk.Conn, path string, acl []zk.ACL) error {
	at := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		at += "/" + part
		if ok, _, err := conn.Exists(at); err != nil {
			return fmt.Errorf("rmq: zookeeper exists %s: %w", at, err)
		} else if ok {
			continue
		}
		if _, err := conn.Create(at, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("rmq: zookeeper create %s: %w", at, err)
		}
	}
	return nil
}

// recordTopic stores a topic definition unless one exists; a different one is
// coordinator.ErrTopicConflict. Definitions compare as JSON values.
func recordTopic(conn *zk.Conn, p nodePaths, name, def string, acl []zk.ACL) error {
	path := p.topic(name)
	_, err := conn.Create(path, []byte(def), 0, acl)
	if err == nil {
		return nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("rmq: zookeeper create %s: %w", path, err)
	}
	old, _, err := conn.Get(path)
	if err != nil {
		return fmt.Errorf("rmq: zookeeper get %s: %w", path, err)
	}
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal([]byte(def), &b) != nil || !jsonEqual(a, b) {
		return fmt.Errorf("%w: %s holds %s, not %s", coordinator.ErrTopicConflict, path, old, def)
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a) // maps marshal with sorted keys
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// electionSeq returns the sequence number of an election node name.
func electionSeq(name string) (int64, bool) {
	i := strings.LastIndex(name, "n_")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+2:], 10, 64)
	return n, err == nil
}

// electionLeader returns the election node with the lowest sequence.
func electionLeader(children []string) string {
	var best string
	var bestSeq int64 = -1
	for _, c := range slices.Sorted(slices.Values(children)) {
		if seq, ok := electionSeq(c); ok && (bestSeq < 0 || seq < bestSeq) {
			best, bestSeq = c, seq
		}
	}
	return best
}
