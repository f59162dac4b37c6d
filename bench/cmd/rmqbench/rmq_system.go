package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
)

// rmqNamespace is the namespace of every RMQ client in the benchmark.
const rmqNamespace = "bench"

// rmqSystem is one RMQ client on a go-redis client of its own (single node,
// or Cluster in a cluster run).
type rmqSystem struct {
	r       redis.UniversalClient
	c       *rmq.Client
	started chan error // Start's result, once it returns
}

// openRMQ returns an RMQ client on a new go-redis client (hooked, if hook is not nil).
func openRMQ(e *env, hook redis.Hook, opts ...rmq.Option) (*rmqSystem, error) {
	r := e.newClient()
	if hook != nil {
		r.AddHook(hook)
	}
	c, err := rmq.New(r, append([]rmq.Option{rmq.WithNamespace(rmqNamespace)}, opts...)...)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &rmqSystem{r: r, c: c}, nil
}

func (s *rmqSystem) define(ctx context.Context, name string, slots int, typ rmq.TopicType) error {
	return s.c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: slots, Type: typ})
}

// priorityMessage is payload i as a Priority message (priorities 17..1016).
func priorityMessage(topic string, p []byte, i int) rmq.PriorityMessage {
	return rmq.PriorityMessage{Topic: topic, Content: p, Priority: spreadPriority(i)}
}

// spreadPriority is message i's priority in most scenarios: 17..1016, so
// that a batch of pops holds many distinct scores.
func spreadPriority(i int) int64 { return 17 + int64(i%1000) }

// onePriority gives every message priority 500, as a topic that uses no
// priorities has them.
func onePriority(int) int64 { return 500 }

// fillPriority stores pl on a Priority topic with SendBatch, 1,000 per call,
// with priorities 17..1016.
func (s *rmqSystem) fillPriority(ctx context.Context, topic string, pl [][]byte) error {
	return s.fillPriorities(ctx, topic, pl, spreadPriority)
}

// fillPriorities stores pl on a Priority topic with SendBatch, 1,000 per
// call, payload i with priority prio(i).
func (s *rmqSystem) fillPriorities(ctx context.Context, topic string, pl [][]byte, prio func(int) int64) error {
	batch := make([]rmq.OutgoingMessage, 0, 1000)
	for i, p := range pl {
		batch = append(batch, rmq.PriorityMessage{Topic: topic, Content: p, Priority: prio(i)})
		if len(batch) == cap(batch) || i == len(pl)-1 {
			if err := s.c.Producer().SendBatch(ctx, batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// start runs the consumers in the background.
func (s *rmqSystem) start() {
	s.started = make(chan error, 1)
	go func() { s.started <- s.c.Start(context.Background()) }()
}

// close stops the client gracefully and closes its Redis client.
func (s *rmqSystem) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.c.Close(ctx)
	if s.started != nil {
		select {
		case e := <-s.started:
			if e != nil && !errors.Is(e, context.Canceled) {
				err = errors.Join(err, e)
			}
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("rmq: Start did not return within 30s of Close"))
		}
	}
	return errors.Join(err, s.r.Close())
}

// waitSettled polls Stats until topic has nothing in store or prepare: every
// message popped and committed.
func (s *rmqSystem) waitSettled(ctx context.Context, topic string) error {
	for {
		st, err := s.c.Stats(ctx, topic)
		if err != nil {
			return err
		}
		if st.Store == 0 && st.Prepare == 0 {
			if st.Dead > 0 {
				return fmt.Errorf("rmq: %d dead messages", st.Dead)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q to settle (store %d, prepare %d): %w", topic, st.Store, st.Prepare, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// countingListener counts calls and closes done at the target count.
type countingListener struct {
	calls  atomic.Int64
	target int64
	done   chan struct{}
}

func newCountingListener(target int) *countingListener {
	return &countingListener{target: int64(target), done: make(chan struct{})}
}

func (l *countingListener) OnMessage(context.Context, *rmq.Message) error {
	if l.calls.Add(1) == l.target {
		close(l.done)
	}
	return nil
}

// rmqDrain fills a Priority topic of the given slots with e.n messages of
// priorities 17..1016, then times Start → every message committed with
// threads consumers and a no-op listener. batch is WithBatchSize; 0 keeps
// the library's default.
func rmqDrain(ctx context.Context, e *env, slots, threads, batch int) (metrics, error) {
	return rmqDrainPriorities(ctx, e, slots, threads, batch, spreadPriority)
}

// rmqDrainPriorities is rmqDrain with message i at priority prio(i).
func rmqDrainPriorities(ctx context.Context, e *env, slots, threads, batch int, prio func(int) int64) (metrics, error) {
	var opts []rmq.Option
	if batch > 0 {
		opts = append(opts, rmq.WithBatchSize(batch))
	}
	s, err := openRMQ(e, nil, opts...)
	if err != nil {
		return nil, err
	}
	const topic = "drain"
	if err := s.define(ctx, topic, slots, rmq.Priority); err != nil {
		return nil, errors.Join(err, s.close())
	}
	if err := s.fillPriorities(ctx, topic, payloads(e.n, "c"), prio); err != nil {
		return nil, errors.Join(err, s.close())
	}
	l := newCountingListener(e.n)
	if err := s.c.Subscribe(topic, l, rmq.WithThreads(threads)); err != nil {
		return nil, errors.Join(err, s.close())
	}
	m := metrics{}
	meter := startMeter(ctx, e)
	s.start()
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, errors.Join(fmt.Errorf("drained %d of %d: %w", l.calls.Load(), e.n, ctx.Err()), s.close())
	}
	err = s.waitSettled(ctx, topic)
	if err == nil {
		err = meter.stop(ctx, e.n, m)
	}
	if calls := l.calls.Load(); calls != int64(e.n) {
		log.Printf("note: %d listener calls for %d messages (redeliveries)", calls, e.n)
	}
	return m, errors.Join(err, s.close())
}
