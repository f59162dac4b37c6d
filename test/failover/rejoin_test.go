package failover_test

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicaWatch watches a master until it has a replica online (in sync).
type replicaWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	online time.Time // zero until seen
}

// watchReplica starts watching the master at addr, polling INFO
// replication every 20 ms until it lists a replica in state online.
func watchReplica(addr string) *replicaWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &replicaWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		defer c.Close()
		for {
			info, err := c.Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "state=online") {
				w.mu.Lock()
				w.online = time.Now()
				w.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

// onlineAt returns when the replica was first seen online; zero if not yet.
func (w *replicaWatch) onlineAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.online
}

// stop ends the watch and waits for its goroutine.
func (w *replicaWatch) stop() {
	w.cancel()
	<-w.done
}

// rejoin restarts the killed node recoveryBound after the promotion (not
// sooner: the restarted node answers at the dead master's address again, with
// MOVED as a replica, which would tell clients of the new master sooner than
// the failover itself), and watches the new master until the node is its
// replica in sync.
func (r *failoverRun) rejoin(promoted time.Time) *replicaWatch {
	time.Sleep(time.Until(promoted.Add(recoveryBound)))
	r.d.rejoin(r.t, r.newAddr)
	r.notes = append(r.notes, "killed node restarted at "+secs(time.Since(r.t0))+" to serve as a replica again")
	return watchReplica(r.newAddr)
}

// awaitRejoined waits, until promoted+2×runAfterPromotion at most, for the
// rejoined replica to have been online for recoveryBound and a second, so
// that the run shows whether Sends are acknowledged again; it notes when the
// replica came online.
func (r *failoverRun) awaitRejoined(w *replicaWatch, promoted time.Time) {
	defer w.stop()
	for limit := promoted.Add(2 * runAfterPromotion); time.Now().Before(limit); {
		if o := w.onlineAt(); !o.IsZero() && time.Since(o) > recoveryBound+time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.replicaOnline = never
	if o := w.onlineAt(); !o.IsZero() {
		r.replicaOnline = r.since(o)
		r.notes = append(r.notes, "the restarted node was an online replica of "+r.newAddr+" at "+secs(r.replicaOnline))
	} else {
		r.notes = append(r.notes, "the restarted node never became an online replica of "+r.newAddr)
	}
}
