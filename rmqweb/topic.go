package rmqweb

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rmq-go/rmq"
)

// Sizes of the topic page's lists.
const (
	slotsPerPage = 256
	nextDueShown = 10
	deadShown    = 100
)

// topicPage shows one topic.
type topicPage struct {
	page
	Summary topicSummary
	// TimeTopic is true for RangeMerge and FixedTime topics, whose
	// messages have due times.
	TimeTopic bool
	Heat      heatStrip
	// Slots are the rows of the slot table, from SlotsFrom; PrevFrom and
	// NextFrom page it (-1: no such page).
	Slots              []slotRow
	SlotsFrom, SlotsTo int
	PrevFrom, NextFrom int
	OwnersKnown        bool
	// Slot is the slot whose next messages are listed: the one asked for,
	// else the one with the most waiting.
	Slot    int
	NextDue []pendingRow
	Dead    []deadRow
	// NextDueErr and DeadErr are true when those lists could not be read.
	NextDueErr, DeadErr bool
	// DeadMore is true when the topic has more dead messages than listed.
	DeadMore bool
}

// slotRow is one slot's line.
type slotRow struct {
	rmq.SlotStats
	Waiting  int64
	Assigned bool // a worker thread is assigned (Redis coordinator)
	Worker   string
	Thread   int
	Holder   string
	Selected bool
}

// pendingRow is a waiting message.
type pendingRow struct {
	Content     string
	Due         time.Time
	Priority    int64
	RetriesLeft int
	Retrying    bool
}

// deadRow is a dead message; for the forms that act on it, Raw is its
// content in URL-safe base64, or Sum its SHA-256 when the content is larger
// than maxRawContent.
type deadRow struct {
	Slot     int
	Content  string
	Raw, Sum string
	Died     time.Time
}

// topicPage serves a topic's page: ?t=NAME[&slot=N][&from=N].
func (s *server) topicPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.URL.Query().Get("t")
	p := topicPage{page: s.page(w, r, "")}
	p.Notice = notice(r)
	topics, _, err := s.topics(ctx)
	if err != nil {
		p.Errors = append(p.Errors, s.readFailed("the topics", err))
		s.render(w, r, http.StatusInternalServerError, "error", errorPage{page: p.page, Status: 500, StatusText: "Redis error"})
		return
	}
	var topic *rmq.Topic
	for i := range topics {
		if topics[i].Name == name {
			topic = &topics[i]
		}
	}
	if topic == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no topic %q in namespace %q", name, s.c.Namespace()))
		return
	}
	flows, flowErr := s.flows(ctx)
	if flowErr != "" {
		p.Errors = append(p.Errors, flowErr)
	}
	var errs []string
	p.Summary, errs = s.summary(ctx, *topic, flows)
	p.TimeTopic = topic.Type != rmq.Priority
	p.Errors = append(p.Errors, errs...)
	p.fillSlots(s, r, *topic)
	if next, err := s.c.NextDue(ctx, name, p.Slot, nextDueShown); err != nil {
		p.NextDueErr = true
		p.Errors = append(p.Errors, s.readFailed(fmt.Sprintf("the next messages of slot %d", p.Slot), err))
	} else {
		for _, m := range next {
			p.NextDue = append(p.NextDue, pendingRow{Content: printable(m.Content), Due: m.Due, Priority: m.Priority,
				RetriesLeft: m.RetriesLeft, Retrying: m.Retrying})
		}
	}
	if dead, err := s.c.DeadMessages(ctx, name, deadShown); err != nil {
		p.DeadErr = true
		p.Errors = append(p.Errors, s.readFailed("the dead messages", err))
	} else {
		for _, d := range dead {
			row := deadRow{Slot: d.Slot, Content: printable(d.Content), Died: d.Died}
			if len(d.Content) > maxRawContent {
				row.Sum = contentSum(d.Content)
			} else {
				row.Raw = base64.RawURLEncoding.EncodeToString(d.Content)
			}
			p.Dead = append(p.Dead, row)
		}
		p.DeadMore = int64(len(dead)) < p.Summary.Backlog.Dead
	}
	s.render(w, r, http.StatusOK, "topic", p)
}

// fillSlots fills the heat strip, the slot table's window and the slot
// whose next messages are listed.
func (p *topicPage) fillSlots(s *server, r *http.Request, t rmq.Topic) {
	q := r.URL.Query()
	b := p.Summary.Backlog
	waiting := make([]int64, t.SlotAmount)
	for i, st := range b.Slots {
		if i < len(waiting) {
			waiting[i] = st.Store + st.Retry
		}
	}
	p.Heat = newHeatStrip(waiting)
	if p.Summary.BacklogErr != "" {
		for i := range p.Heat.Cells {
			p.Heat.Cells[i].Title = "backlog unreadable"
		}
	}
	p.Slot = 0
	for i, n := range waiting {
		if n > waiting[p.Slot] {
			p.Slot = i
		}
	}
	if n, err := strconv.Atoi(q.Get("slot")); err == nil && n >= 0 && n < t.SlotAmount {
		p.Slot = n
	}
	from := p.Slot / slotsPerPage * slotsPerPage
	if n, err := strconv.Atoi(q.Get("from")); err == nil && n >= 0 && n < t.SlotAmount {
		from = n / slotsPerPage * slotsPerPage
	}
	to := min(from+slotsPerPage, t.SlotAmount)
	p.SlotsFrom, p.SlotsTo, p.PrevFrom, p.NextFrom = from, to-1, -1, -1
	if from > 0 {
		p.PrevFrom = from - slotsPerPage
	}
	if to < t.SlotAmount {
		p.NextFrom = to
	}
	owners, err := s.c.Owners(r.Context(), t.Name)
	if err != nil {
		p.Errors = append(p.Errors, s.readFailed("the slot owners", err))
	}
	p.OwnersKnown = err == nil
	for i := from; i < to; i++ {
		row := slotRow{SlotStats: rmq.SlotStats{Slot: i}, Waiting: waiting[i], Selected: i == p.Slot}
		if i < len(b.Slots) {
			row.SlotStats = b.Slots[i]
		}
		if i < len(owners) {
			o := owners[i]
			row.Assigned, row.Worker, row.Thread, row.Holder = o.Worker != "", o.Worker, o.Thread, o.Holder
		}
		p.Slots = append(p.Slots, row)
	}
}
