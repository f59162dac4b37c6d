package rdb

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/wait"
)

// nodeBatch is the part of a Cluster store that goes to one master.
type nodeBatch struct {
	client  pipeliner
	index   []int // into the entries being stored
	entries []Entry
	errs    []error
	pubErr  error
}

// storeCluster stores entries on a Cluster: grouped by the master of their
// key, one pipeline per master (storeOn), the masters in parallel, so one
// slow or dead master delays only its own entries. Entries refused with a
// sign of a stale slot map (a dead node, MOVED, ASK, CLUSTERDOWN, TRYAGAIN)
// go again after the map's reload, up to MaxRedirects times (at once after a
// redirection, to the node it named: redirect.go; else after the Cluster's
// backoff). pubs are published once
// the entries are stored.
func (b *redisBroker) storeCluster(ctx context.Context, entries []Entry, pubs []Publication) ([]error, error) {
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(entries))
		}
		errs[i] = err
	}
	retries := clusterRetries(b.topo.client.Options())
	todo := make([]int, len(entries))
	for i := range todo {
		todo[i] = i
	}
	var pubErr error
	copied := false // entries is a copy of the caller's, with redirections
	for attempt := 0; len(todo) > 0; attempt++ {
		batches := b.routeEntries(ctx, entries, todo, fail)
		var wg sync.WaitGroup
		for _, nb := range batches {
			wg.Go(func() {
				sc := scratchPool.Get().(*pipeScratch)
				nb.errs, nb.pubErr = b.storeOn(ctx, nb.client, nb.entries, nil, sc)
				scratchPool.Put(sc)
			})
		}
		wg.Wait()
		todo = todo[:0]
		pause := time.Duration(-1) // the shortest any entry to go again asks for
		for _, nb := range batches {
			if pubErr == nil {
				pubErr = nb.pubErr
			}
			for k, err := range nb.errs {
				if err == nil {
					continue
				}
				i := nb.index[k]
				if b.topo.failed(err) && attempt < retries.max && ctx.Err() == nil {
					if _, _, ok := redirectOf(err); ok || entries[i].Node != "" {
						if !copied {
							entries, copied = slices.Clone(entries), true
						}
						entries[i].redirectTo(err)
					}
					todo = append(todo, i)
					d := retries.delay(attempt)
					if redirected(err) {
						d = 0
					}
					if pause < 0 || d < pause {
						pause = d
					}
					continue
				}
				fail(i, err)
			}
		}
		if len(todo) > 0 && pause > 0 {
			if wait.Sleep(ctx, pause); ctx.Err() != nil {
				for _, i := range todo {
					fail(i, ctx.Err())
				}
				todo = todo[:0]
			}
		}
	}
	if errs != nil && allFailed(errs) {
		return errs, pubErr
	}
	for _, p := range pubs {
		if err := b.publish(ctx, b.rdb, p).Err(); err != nil {
			if pubErr == nil {
				pubErr = err
			}
			b.wakes.failedOn(p.Channel, p.Payload, err)
		}
	}
	return errs, pubErr
}

// routeEntries groups the entries named by todo by their key's master; an
// entry whose master cannot be found fails with why.
func (b *redisBroker) routeEntries(ctx context.Context, entries []Entry, todo []int, fail func(int, error)) []*nodeBatch {
	byAddr := make(map[string]*nodeBatch)
	var batches []*nodeBatch
	for _, i := range todo {
		var node *redis.Client
		var err error
		if e := &entries[i]; e.Node != "" {
			node, err = b.moved.at(ctx, b.topo, e.Node, e.Key)
		} else {
			node, err = b.topo.client.MasterForKey(ctx, e.Key)
		}
		if err != nil {
			b.topo.failed(err)
			fail(i, err)
			continue
		}
		addr := node.Options().Addr
		nb := byAddr[addr]
		if nb == nil {
			nb = &nodeBatch{client: node}
			byAddr[addr] = nb
			batches = append(batches, nb)
		}
		nb.index = append(nb.index, i)
		nb.entries = append(nb.entries, entries[i])
	}
	return batches
}

// allFailed reports whether no entry was stored.
func allFailed(errs []error) bool {
	for _, err := range errs {
		if err == nil {
			return false
		}
	}
	return true
}
