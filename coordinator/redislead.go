package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// redisWorker is a worker's description in the Redis coordinator's workers
// hash.
type redisWorker struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Started int64  `json:"started"` // Unix ms
	TTL     int64  `json:"ttl"`     // lease TTL in ms
	// Drain is the worker's drain timeout in ms: how long a lease of a slot
	// it was told to give up stays valid there (see patienceFor).
	Drain   int64                     `json:"drain,omitempty"`
	Leaving bool                      `json:"leaving,omitempty"`
	Topics  map[string]redisTopicSpec `json:"topics"`
	// Declined lists per topic the slots the worker cannot serve now
	// (Member.Declines).
	Declined map[string][]int `json:"declined,omitempty"`
	// GaveUp lists per topic the slots whose leases ended here but whose
	// owner records could not be written back (their master out of reach),
	// each with its record: the worker never uses that record again, so the
	// next owner may claim over it at once. Keyed by slot, since records of
	// one worker's claims made in the same millisecond read alike.
	GaveUp map[string]map[int]string `json:"gaveUpSlots,omitempty"`
}

// slotsTold is who told the leader a topic's slot amount: a worker that
// serves (alive, not leaving) knows the topic as defined now, where one
// crashed, cut off or leaving may have known a definition since deleted
// (DeleteTopic waits only for presence entries, which lapse before a
// membership does); among alike, the one started last.
type slotsTold struct {
	serving bool
	started int64 // Unix ms
}

// newer reports whether t's word outweighs prev's.
func (t slotsTold) newer(prev slotsTold) bool {
	if t.serving != prev.serving {
		return t.serving
	}
	return t.started >= prev.started
}

// redisTopicSpec is one subscribed topic of a worker.
type redisTopicSpec struct {
	Slots   int `json:"slots"`
	Threads int `json:"threads"`
}

// describe returns this worker's description.
func (r *redisRun) describe(leaving bool) string {
	w := redisWorker{PID: os.Getpid(), Started: r.started.UnixMilli(), TTL: r.cfg.LeaseTTL.Milliseconds(),
		Drain: r.m.DrainTimeout.Milliseconds(), Leaving: leaving,
		Topics: make(map[string]redisTopicSpec, len(r.topics))}
	w.Host, _ = os.Hostname()
	for name, t := range r.topics {
		w.Topics[name] = redisTopicSpec{Slots: t.SlotAmount, Threads: max(t.Threads, 1)}
	}
	for name, t := range r.topics {
		for c := range t.eachHeld {
			if c.unreleased > 0 {
				if w.GaveUp == nil {
					w.GaveUp = make(map[string]map[int]string)
				}
				if w.GaveUp[name] == nil {
					w.GaveUp[name] = make(map[int]string)
				}
				w.GaveUp[name][c.slot] = c.record
			}
		}
	}
	if !leaving {
		w.Declined = r.m.Declines.Of(func(topic string) bool { _, ok := r.topics[topic]; return ok })
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// encodeAssignment returns the stored form of owners (PackedOwners).
func encodeAssignment(owners []Owner) string {
	b, _ := json.Marshal(PackOwners(owners))
	return string(b)
}

// decodeAssignment parses a stored assignment ("" is none).
func decodeAssignment(s string) ([]Owner, error) {
	if s == "" {
		return nil, nil
	}
	var a PackedOwners
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, err
	}
	return a.Owners(), nil
}

// lead recomputes every topic's assignment from the live members and writes
// those that changed. version is the membership version it acts on.
func (r *redisRun) lead(ctx context.Context, id string, version int64) error {
	descs, err := r.co.Workers(ctx)
	if err != nil {
		return fmt.Errorf("rmq: redis coordinator: read workers: %w", err)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for w := range descs {
			if !yield(w) {
				return
			}
		}
	})
	alive, err := r.co.Alive(ctx, ids)
	if err != nil {
		return fmt.Errorf("rmq: redis coordinator: read members: %w", err)
	}
	units := make(map[string][]WorkerThreads) // topic → workers' threads
	slots := make(map[string]int)
	told := make(map[string]slotsTold) // topic → whose slot amount slots holds
	declines := r.declines.Begin()
	for i, w := range ids {
		var d redisWorker
		if err := json.Unmarshal([]byte(descs[w]), &d); err != nil {
			r.log.Warn("rmq: redis coordinator: unreadable worker description; ignoring it", "worker", w, "err", err)
			continue
		}
		by := slotsTold{serving: alive[i] && !d.Leaving, started: d.Started}
		for topic, spec := range d.Topics {
			if prev, seen := told[topic]; !seen || spec.Slots > 0 && (slots[topic] == 0 || by.newer(prev)) {
				slots[topic], told[topic] = spec.Slots, by
			}
			if alive[i] && !d.Leaving {
				units[topic] = append(units[topic], WorkerThreads{Worker: w, Threads: spec.Threads})
				declines.Saw(w, topic, d.Declined[topic])
			}
		}
	}
	r.leadAgain = declines.End()
	topics := slices.Sorted(func(yield func(string) bool) {
		for t := range slots {
			if !yield(t) {
				return
			}
		}
	})
	stored, err := r.co.Assignments(ctx, topics)
	if err != nil {
		return fmt.Errorf("rmq: redis coordinator: read assignments: %w", err)
	}
	changed := make(map[string]string)
	for i, topic := range topics {
		prev, err := decodeAssignment(stored[i])
		if err != nil {
			r.log.Warn("rmq: redis coordinator: unreadable assignment; computing a new one", "topic", topic, "err", err)
			prev = nil
		}
		next := AssignTopic(topic, slots[topic], units[topic], prev, declines.Honoured(topic))
		if enc := encodeAssignment(next); enc != stored[i] {
			changed[topic] = enc
		}
	}
	if len(changed) > 0 {
		epoch, err := r.co.Assign(ctx, id, changed)
		if err != nil {
			return fmt.Errorf("rmq: redis coordinator: write assignments: %w", err)
		}
		if epoch < 0 {
			r.log.Info("rmq: redis coordinator: no longer the leader; assignments left to the new one")
			return nil
		}
		r.log.Info("rmq: redis coordinator: assigned", "topics", len(changed), "epoch", epoch, "workers", len(ids))
	}
	r.versionSeen = version
	return nil
}

// readAssignments refreshes the subscribed topics' desired owners; epoch is
// the assignment epoch known before the read.
func (r *redisRun) readAssignments(ctx context.Context, epoch int64) error {
	names := make([]string, 0, len(r.topics))
	for name := range r.topics {
		names = append(names, name)
	}
	vals, err := r.co.Assignments(ctx, names)
	if err != nil {
		return fmt.Errorf("rmq: redis coordinator: read assignments: %w", err)
	}
	for i, name := range names {
		owners, err := decodeAssignment(vals[i])
		if err != nil {
			r.log.Warn("rmq: redis coordinator: unreadable assignment; keeping the last one", "topic", name, "err", err)
			continue
		}
		r.topics[name].desired = owners
	}
	r.epochSeen = epoch
	return nil
}
