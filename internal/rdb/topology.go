package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// topology keeps a Cluster client's slot map fresh when calls fail in a way
// that says it may be stale: a refused or broken connection, a timeout,
// MOVED, ASK, CLUSTERDOWN, TRYAGAIN, READONLY or LOADING. go-redis reloads
// it on MOVED only, and otherwise every ClusterStateReloadInterval (60 s by
// default), so without this a dead master's slots would stay mapped to it
// long after its replica took over. A reload is asked for at most once per
// reloadEvery; go-redis runs it in the background.
type topology struct {
	client *redis.ClusterClient
	last   atomic.Int64 // when a reload was last asked for, Unix ns
}

// reloadEvery bounds how often a failing Cluster reloads its slot map.
const reloadEvery = 200 * time.Millisecond

// topologies holds one topology per Cluster client, shared by everything of
// RMQ that uses the client (sender, consumers, coordinator), so that their
// failures share one rate limit. It holds both weakly: a topology lives
// as long as something of RMQ uses it, and its client as long as that or
// the caller does (the caller owns it: New), and the entry goes with the
// topology.
var topologies sync.Map // weak.Pointer[redis.ClusterClient] → weak.Pointer[topology]

// topologyOf returns the topology of client, or nil if it is not a Cluster
// client.
func topologyOf(client redis.UniversalClient) *topology {
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	key := weak.Make(cc)
	for {
		held, found := topologies.Load(key)
		if found {
			if t := held.(weak.Pointer[topology]).Value(); t != nil {
				return t
			}
		}
		t := &topology{client: cc}
		ref := weak.Make(t)
		if found && !topologies.CompareAndSwap(key, held, ref) || !found && !storeNew(key, ref) {
			continue // another call stored one meanwhile
		}
		runtime.AddCleanup(t, func(key weak.Pointer[redis.ClusterClient]) { topologies.CompareAndDelete(key, ref) }, key)
		return t
	}
}

// storeNew stores ref under key unless an entry is there.
func storeNew(key weak.Pointer[redis.ClusterClient], ref weak.Pointer[topology]) bool {
	_, loaded := topologies.LoadOrStore(key, ref)
	return !loaded
}

// failed reports whether err says the slot map may be stale, and if so asks
// for a reload (unless one was asked for within reloadEvery). Safe on a nil
// topology (not a Cluster): it reports false.
func (t *topology) failed(err error) bool {
	if t == nil || !staleMap(err) {
		return false
	}
	t.refresh()
	return true
}

// refresh asks for a reload of the slot map unless one was asked for within
// reloadEvery.
func (t *topology) refresh() {
	now := time.Now().UnixNano()
	last := t.last.Load()
	if now-last >= int64(reloadEvery) && t.last.CompareAndSwap(last, now) {
		t.client.ReloadState(context.Background())
	}
}

// RefreshTopology implements Broker: on a Cluster, a reload of the slot map
// unless one was asked for within reloadEvery; nothing on a single node.
func (b *redisBroker) RefreshTopology() {
	if b.topo != nil {
		b.topo.refresh()
	}
}

// staleMap reports whether a call that failed with err may have gone to the
// wrong node, or to one that is gone.
func staleMap(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	var re ReplyError
	if errors.As(err, &re) {
		msg = string(re)
	}
	for _, p := range staleReplies {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// staleReplies are the prefixes of error replies that say a key's slot is
// served elsewhere, or not served right now.
var staleReplies = []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ", "LOADING ", "MASTERDOWN "}

// Node implements Broker: the address of the master serving the slot of
// keys on a Cluster, by the client's current slot map ("" on a single node,
// or while the map cannot be had).
func (b *redisBroker) Node(keys SlotKeys) string {
	if b.topo == nil {
		return ""
	}
	node, err := b.topo.client.MasterForKey(context.Background(), keys.Store)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}
