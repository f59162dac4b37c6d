package rmqweb

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rmq-go/rmq"
)

// workersPage lists the processes consuming the namespace.
type workersPage struct {
	page
	Workers []workerRow
	Read    bool // the list was read (it may be empty)
}

// workerRow is one worker's line.
type workerRow struct {
	rmq.Worker
	Threads, Owned string // "topic: n" per topic
	Heartbeat      string // its age, or "—"
	Declines       string // "topic: n" per topic: slots whose Cluster master it cannot reach
}

// workersPage serves the workers page.
func (s *server) workersPage(w http.ResponseWriter, r *http.Request) {
	p := workersPage{page: s.page(w, r, "workers")}
	workers, err := s.c.Workers(r.Context())
	if err != nil {
		p.Errors = append(p.Errors, s.readFailed("the workers", err))
		s.render(w, r, http.StatusInternalServerError, "workers", p)
		return
	}
	p.Read = true
	now := time.Now()
	for _, wk := range workers {
		row := workerRow{Worker: wk, Threads: perTopic(wk.Topics), Owned: perTopic(wk.OwnedSlots), Heartbeat: "—"}
		if !wk.LastHeartbeat.IsZero() {
			row.Heartbeat = relative(wk.LastHeartbeat, now)
		}
		declined := make(map[string]int, len(wk.Declined))
		for topic, slots := range wk.Declined {
			declined[topic] = len(slots)
		}
		row.Declines = perTopic(declined)
		p.Workers = append(p.Workers, row)
	}
	s.render(w, r, http.StatusOK, "workers", p)
}

// perTopic formats counts per topic as "a: 2, b: 8", sorted by topic.
func perTopic(m map[string]int) string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s: %d", name, m[name])
	}
	return strings.Join(parts, ", ")
}
