package rmqprom

import (
	"sort"

	"github.com/rmq-go/rmq"
)

// A read that runs out of time leaves out the topics it had not reached.
// Were every read to start from the first topic, a Redis too slow for all of
// them within the timeout would leave out the same topics, the last by name,
// from every scrape: never reported at all. So the next read starts where the
// last one stopped, and over a few scrapes every topic is reported. A read
// that stopped at the topic it started with (a topic whose backlog cannot be
// read in time at all: its Cluster master out of reach) would start every
// read there and report nothing more: the next read starts after it.

// resumeAt returns the index in topics (sorted by name, as Client.Topics
// returns them) at which this read starts: the first topic the last read did
// not reach, or the one after it by name if it is gone (or was the one that
// read started and stopped at); 0 after a read that reached every topic.
func (col *Collector) resumeAt(topics []rmq.Topic) int {
	col.mu.Lock()
	from, past := col.resume, col.resumePast
	col.mu.Unlock()
	if from == "" {
		return 0
	}
	i := sort.Search(len(topics), func(i int) bool { return topics[i].Name >= from })
	if past && i < len(topics) && topics[i].Name == from {
		i++
	}
	if i == len(topics) {
		return 0
	}
	return i
}

// stoppedAt records the topic a read ran out of time at ("" when it reached
// every topic), and whether it was the first that read tried: the next read
// then starts after it.
func (col *Collector) stoppedAt(topic string, first bool) {
	col.mu.Lock()
	col.resume, col.resumePast = topic, first
	col.mu.Unlock()
}
