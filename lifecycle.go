package rmq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rmq-go/rmq/coordinator"
)

// clientState is where a Client is in its life: new (subscribing), started
// (consuming), stopped (consumption over for good, the producer still
// works), closed (nothing works).
type clientState int

const (
	stateNew clientState = iota
	stateStarted
	stateStopped
	stateClosed
)

// Start consumes the subscribed topics until ctx ends, Shutdown or Close is
// called, then shuts down gracefully and returns. It returns the first fatal
// error (a coordinator that cannot go on), or nil after a clean stop. A
// client consumes once: Start after consumption ended returns ErrClosed.
// The producer keeps working after Start returns, until Close.
//
// Shutdown order: (1) the coordinator revokes every slot; (2) each thread
// stops popping, returns popped messages it had not started to store
// unchanged, lets the listener in hand finish, settles outcomes, and releases
// its slots; (3) the coordinator leaves the group; (4) the wake-up listener
// stops. Shutdown and Close bound the wait for (2) with their context.
func (c *Client) Start(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	c.mu.Lock()
	switch c.state {
	case stateStopped, stateClosed:
		c.mu.Unlock()
		return ErrClosed
	case stateStarted:
		c.mu.Unlock()
		return ErrStarted
	}
	c.state = stateStarted
	runCtx, stop := context.WithCancel(ctx)
	c.stop, c.done, c.coordDone = stop, make(chan struct{}), make(chan struct{})
	subs := c.subs
	c.mu.Unlock()
	defer close(c.done)
	defer stop()
	coordDone := sync.OnceFunc(func() { close(c.coordDone) })
	defer coordDone()

	p := c.newPresence(subs)
	exclusive := make(chan time.Time, 1) // the latest only (Member.Exclusive)
	p.vouch = func(until time.Time) {
		select {
		case <-exclusive:
		default:
		}
		exclusive <- until // one sender: join, then renew's goroutine
	}
	var yielded error // set once, before stop, by the presence's goroutine
	var yieldOnce sync.Once
	p.yield = func(other string) {
		yieldOnce.Do(func() {
			yielded = fmt.Errorf("%w: %s consumes it too (this process: %s)", ErrNamespaceBusy, other, p.me)
			stop()
		})
	}
	if err := p.join(runCtx); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.stopping && ctx.Err() == nil {
			// Shutdown or Close came while joining: a clean stop.
			if c.state == stateStarted {
				c.state = stateStopped
			}
			return nil
		}
		c.state = stateNew // nothing consumed: Start may be tried again
		return err
	}
	c.stats.start()
	bgCtx, stopBackground := context.WithCancel(c.hard)
	// What serves only the consumption (the flow controls, the wake-ups, the
	// idle sweeps) ends when the shutdown begins: the threads pop no more
	// then, and a call of theirs under way ends while the slots are handed
	// back, not after (a call into a Redis out of reach waits out the
	// client's timeouts whatever its ctx).
	consuming, stopConsuming := context.WithCancel(bgCtx)
	defer stopConsuming()
	defer context.AfterFunc(runCtx, stopConsuming)()
	control := newControlWatcher(c, subs)
	if err := control.refresh(runCtx); err != nil {
		c.cfg.logger.Warn("rmq: reading flow control failed; consuming once it is read", "err", err)
	}
	c.background.Go(func() { p.renew(bgCtx) })
	c.background.Go(func() { control.run(consuming) })
	c.background.Go(func() { newWakeListener(c, subs, control).run(consuming) })

	member := coordinator.Member{Namespace: c.cfg.namespace, DrainTimeout: c.cfg.consumeTimeout, Abandoned: c.abandoned,
		Exclusive: exclusive}
	if w := newReachWatch(c, subs); w != nil {
		member.Declines = c.declines
		c.background.Go(func() { w.run(bgCtx) })
	}
	quit := make(chan struct{})
	var threads sync.WaitGroup
	for _, s := range subs {
		member.Topics = append(member.Topics, coordinator.TopicThreads{
			Topic: s.topic.Name, SlotAmount: s.topic.SlotAmount, Threads: len(s.threads),
			Definition: encodeTopic(s.topic.Topic)})
		for _, t := range s.threads {
			threads.Go(func() { t.run(c.hard, consuming, quit) })
		}
	}

	err := c.cfg.coordinator.Run(runCtx, member, leaseRouter(subs))
	coordDone()
	close(quit)
	threads.Wait()
	// Share what the consumers counted before the presence goes (flushNow).
	flushCtx, cancelFlush := context.WithTimeout(c.hard, statsCloseCallWait)
	c.stats.flushNow(flushCtx)
	cancelFlush()
	stopBackground()
	c.background.Wait()

	c.mu.Lock()
	if c.state == stateStarted {
		c.state = stateStopped
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("rmq: coordinator: %w", err)
	}
	return yielded // a process of the local coordinator found a neighbour while it consumed
}

// Shutdown ends consumption gracefully while the producer keeps working:
// consumers stop popping, popped messages not yet started return to store
// unchanged, in-flight listeners finish and their outcomes are settled, and
// the slots are handed back; then Start returns. A client consumes once:
// Start and Subscribe after Shutdown return ErrClosed. Shutdown before Start
// only forbids starting.
//
// If ctx ends first, consumption is abandoned: listeners' contexts are
// cancelled, the coordinator's calls under way are cancelled, and Shutdown
// returns ctx.Err() once no goroutine of the consumers touches Redis any
// more. That is one Redis call after ctx ends: at most the go-redis
// client's DialTimeout plus its ReadTimeout (5 s each by default) when
// Redis is unreachable, milliseconds otherwise; then up to 1 s to tell the
// group this process left and 1 s to remove its presence entry (each up to
// the ReadTimeout when the client's reads do not heed a ctx's deadline, as
// go-redis's do not unless ContextTimeoutEnabled is set; the coordinator's
// records expire by themselves if those fail). Listeners
// still running then are left to return on their own; their outcomes are not
// settled, so their messages are delivered again after the consume timeout
// (at least once, never lost).
//
// Without a deadline on ctx the graceful path waits for the listeners in
// hand and for the Redis calls it makes. A listener that ends consumption
// must therefore call Shutdown or Close in a goroutine of its own and return:
// called in the listener, they wait for that very call (for ever without a
// deadline; with one, its message is settled by nobody and delivered
// again). A call into a Redis out of reach
// waits out one ReadTimeout or DialTimeout whatever its ctx (go-redis's
// retries are cut after a second), so the shutdown spares such calls: the
// calls that serve only the consumption (flow controls, idle sweeps) end
// while the slots are handed back; the Redis coordinator's leave stops
// calling the coordinator's master once one of its calls there went
// unanswered; and neither the presence entry's removal nor Close's last
// metrics flush is tried when Redis left the call before it unanswered (the
// entry expires within seconds; the last metrics are lost, with a Warn
// line). With the coordinator's master out of reach and go-redis's default
// timeouts, a graceful Close then waits for about two such calls. Give ctx a
// deadline all the same: that bounds the listeners too.
func (c *Client) Shutdown(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	c.mu.Lock()
	state, stop, done := c.state, c.stop, c.done
	if state == stateNew {
		c.state = stateStopped
	}
	c.stopping = true
	c.mu.Unlock()
	if done == nil {
		return nil // never started
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	c.abandon()
	return ctx.Err()
}

// Close shuts the client down: Shutdown, then the producer. Sends in flight
// get their replies (within ctx); Sends after Close fail with ErrClosed.
// The shared metrics' periodic flush goes on while the consumers drain, each
// flush within a second, until Redis leaves one unanswered; what is left goes
// with the last flush, at the end of Close.
// Close closes the client's own send connection (see WithSendStream), not
// the Redis client, which the caller closes after Close.
//
// If ctx ends first, Close returns ctx.Err() once no goroutine of the client
// touches Redis any more (see Shutdown for how long that can take; the
// producer adds at most one write under way, bounded the same way, and the
// SendBatch pipelines under way, even those whose callers' ctx ended; it fails
// Sends still queued, and SendBatch calls from then on, with ErrClosed). A
// Send whose command was written but whose reply had not come then fails
// with an error that wraps ErrClosed and says that the message may have
// been stored: Redis may have run it.
// After Close the methods that write (DefineTopic, DeleteTopic, PauseTopic,
// ResumeTopic, SetRateLimit, RequeueDead, PurgeDead, DeleteDead and their
// variants) fail with ErrClosed; those that only read still work.
// Close is idempotent, and safe to call from several goroutines.
func (c *Client) Close(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	c.stats.quiet()
	err := c.Shutdown(ctx)
	c.mu.Lock()
	c.state = stateClosed
	c.closed.Store(true)
	c.mu.Unlock()
	// One caller at a time closes the producer and flushes the metrics last;
	// they are idempotent, not safe from two goroutines at once.
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	c.batches.shut()
	c.broker.Close(ctx)
	c.stats.close(ctx)
	c.hardCancel()
	if err == nil {
		err = ctx.Err() // it ended before Close was done: the producer's waits were cut
	}
	return err
}

// abandon ends consumption without waiting for listeners: their contexts are
// cancelled, the coordinator loses every lease, consumers make no new Redis
// call, and it returns once the calls in flight, the coordinator and the
// background goroutines are done.
func (c *Client) abandon() {
	c.hardCancel()
	c.abandonOnce.Do(func() { close(c.abandoned) })
	c.consumers.shut()
	c.mu.Lock()
	coordDone := c.coordDone
	c.mu.Unlock()
	if coordDone != nil {
		<-coordDone
	}
	c.background.Wait()
}

// callGate lets calls through until it is shut; shut waits for the calls
// inside to leave. enter never waits: a call that comes while shut waits is
// refused at once (a read-write lock would hold it until the calls inside
// had left).
type callGate struct {
	mu     sync.Mutex
	closed bool
	inside sync.WaitGroup // Add only under mu while open, so never beside Wait at zero
}

// enter reports whether a call may go ahead; if so, leave must follow.
func (g *callGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inside.Add(1)
	return true
}

// leave ends a call that entered.
func (g *callGate) leave() { g.inside.Done() }

// shut refuses further calls and waits until every call inside has left.
func (g *callGate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.inside.Wait()
}
