package main

import (
	"errors"

	adjust "github.com/adjust/rmq/v5"
	"github.com/redis/go-redis/v9"
)

// adjustSystem is one adjust/rmq connection and queue on a go-redis client of its own.
type adjustSystem struct {
	r     *redis.Client
	conn  adjust.Connection
	queue adjust.Queue
}

// openAdjust opens a connection and the queue "bench".
//
// adjust/rmq v5 has no public way to stop a connection's heartbeat goroutine
// (one SET per second). close therefore closes the go-redis client, so the
// heartbeat sends nothing to Redis any more; it fails 45 times and exits,
// its errors landing in the buffered error channel nobody reads.
func openAdjust(e *env) (*adjustSystem, error) {
	r := newRedis(e.addr)
	errs := make(chan error, adjust.HeartbeatErrorLimit+16)
	conn, err := adjust.OpenConnectionWithRedisClient("bench", r, errs)
	if err != nil {
		r.Close()
		return nil, err
	}
	q, err := conn.OpenQueue("bench")
	if err != nil {
		<-conn.StopAllConsuming()
		r.Close()
		return nil, err
	}
	return &adjustSystem{r: r, conn: conn, queue: q}, nil
}

// fill publishes pl with PublishBytes, 1,000 payloads (one LPUSH) per call.
func (s *adjustSystem) fill(pl [][]byte) error {
	for _, c := range chunks(pl, 1000) {
		if err := s.queue.PublishBytes(c...); err != nil {
			return err
		}
	}
	return nil
}

// close stops consuming (waiting for consumers to return) and closes the Redis client.
func (s *adjustSystem) close() error {
	<-s.conn.StopAllConsuming()
	return errors.Join(s.r.Close())
}
