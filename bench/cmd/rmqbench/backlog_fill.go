package main

import (
	"context"
	"log"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq"
)

const (
	backlogChunk   = 1000      // messages per SendBatch while filling
	backlogFillers = 4         // goroutines filling
	backlogLogStep = 1_000_000 // progress line every this many messages
)

// fillBacklog stores size Priority messages with distinct payloads
// (payload("b", i)) on topic, SendBatch of backlogChunk from backlogFillers
// goroutines, building each chunk when it is sent so that a backlog of
// millions never sits in this process. Progress goes to stderr.
func fillBacklog(ctx context.Context, s *rmqSystem, topic string, size int) error {
	chunks := (size + backlogChunk - 1) / backlogChunk
	var stored atomic.Int64
	start := time.Now()
	return parallel(chunks, backlogFillers, func(c int) error {
		lo, hi := c*backlogChunk, min((c+1)*backlogChunk, size)
		batch := make([]rmq.OutgoingMessage, 0, hi-lo)
		for i := lo; i < hi; i++ {
			batch = append(batch, priorityMessage(topic, payload("b", i), i))
		}
		if err := s.c.Producer().SendBatch(ctx, batch...); err != nil {
			return err
		}
		n := stored.Add(int64(hi - lo))
		if prev := n - int64(hi-lo); size >= backlogLogStep && prev/backlogLogStep != n/backlogLogStep {
			el := time.Since(start)
			log.Printf("    backlog: filled %s of %s in %s (%s/s)", thousands(n), thousands(int64(size)),
				el.Round(time.Second), thousands(int64(float64(n)/el.Seconds())))
		}
		return nil
	})
}
