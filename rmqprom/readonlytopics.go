package rmqprom

import "github.com/rmq-go/rmq"

// A namespace read calls Client.Backlog for every topic of the namespace,
// which makes the client know (look up) each of them: Client.TopicMetrics
// then lists them all, with zeros. Those the client knew only through this
// collector's reads are not this process's topics, so their per-process
// series are left out until the process uses them (sends, consumes), or every
// instance would export some sixty series per topic of the namespace, and a
// scrape would add them to the next one.

// markReadOnly records, among topics, those the client did not know before
// this collector's read: known holds the names Client.TopicMetrics listed
// just before the read. It forgets those the client no longer knows.
func (col *Collector) markReadOnly(topics []rmq.Topic, known map[string]bool) {
	col.mu.Lock()
	defer col.mu.Unlock()
	for name := range col.readOnly {
		if !known[name] {
			delete(col.readOnly, name)
		}
	}
	for _, t := range topics {
		if !known[t.Name] {
			if col.readOnly == nil {
				col.readOnly = make(map[string]bool)
			}
			col.readOnly[t.Name] = true
		}
	}
}

// onlyRead reports whether m's topic is known to the client only through
// this collector's reads and this process has not used it; once it has,
// the topic is this process's for good.
func (col *Collector) onlyRead(m rmq.TopicMetrics) bool {
	col.mu.Lock()
	defer col.mu.Unlock()
	if !col.readOnly[m.Topic] {
		return false
	}
	if used(m) {
		delete(col.readOnly, m.Topic)
		return false
	}
	return true
}

// used reports whether m shows anything this process did with its topic.
func used(m rmq.TopicMetrics) bool {
	return m.Sent != 0 || m.Delivered != 0 || m.Restored != 0 || m.Dead != 0 ||
		m.Lateness.Count != 0 || m.ListenerDuration.Count != 0 || m.OwnedSlots != 0 ||
		m.DeclinedSlots != 0 || m.HeldBack != nil || (m.Breaker != "" && m.Breaker != rmq.BreakerOff)
}
