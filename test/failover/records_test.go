package failover_test

import (
	"sync"
	"time"
)

// sendRecord is one Send of the producers.
type sendRecord struct {
	seq, slot  int
	start, end time.Time
	err        error // nil: acknowledged
}

// deliveryRecord is one call of the consumer's listener.
type deliveryRecord struct {
	seq, slot int
	at        time.Time
}

// recorder collects what the producers and the consumer saw. Its methods
// are safe for concurrent use.
type recorder struct {
	mu         sync.Mutex
	sends      []sendRecord
	deliveries []deliveryRecord
	warm       map[int]bool // slots whose warm-up message was delivered
	skipped    int          // sends not made: their producer had maxInFlight in flight
}

func newRecorder() *recorder { return &recorder{warm: map[int]bool{}} }

func (r *recorder) sent(s sendRecord) {
	r.mu.Lock()
	r.sends = append(r.sends, s)
	r.mu.Unlock()
}

func (r *recorder) delivered(d deliveryRecord) {
	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	r.mu.Unlock()
}

func (r *recorder) warmDelivered(slot int) {
	r.mu.Lock()
	r.warm[slot] = true
	r.mu.Unlock()
}

func (r *recorder) warmSlots() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.warm)
}

func (r *recorder) skip() {
	r.mu.Lock()
	r.skipped++
	r.mu.Unlock()
}

// undelivered returns how many acknowledged messages were not delivered yet,
// and how many acknowledged messages were.
func (r *recorder) undelivered() (missing, done int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := make(map[int]bool, len(r.deliveries))
	for _, d := range r.deliveries {
		got[d.seq] = true
	}
	for _, s := range r.sends {
		if s.err == nil {
			if got[s.seq] {
				done++
			} else {
				missing++
			}
		}
	}
	return missing, done
}

// snapshot returns copies of the records.
func (r *recorder) snapshot() ([]sendRecord, []deliveryRecord, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sendRecord(nil), r.sends...), append([]deliveryRecord(nil), r.deliveries...), r.skipped
}
