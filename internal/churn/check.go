package churn

import (
	"fmt"
	"slices"
	"time"
)

// Overlap is a pair of owned calls of one slot that overlap in time: Second
// started before First ended.
type Overlap struct {
	Slot          int
	First, Second Record
}

func (o Overlap) String() string {
	return fmt.Sprintf("slot %d: %s overlaps %s by %v", o.Slot, describe(o.First), describe(o.Second),
		time.Duration(o.First.End-o.Second.Start))
}

func describe(r Record) string {
	return fmt.Sprintf("{worker %s content %s start %s end %s owned %v}", r.Worker, r.Content,
		clock(r.Start), clock(r.End), r.Owned)
}

func clock(ns int64) string { return time.Unix(0, ns).Format("15:04:05.000000") }

// Overlaps returns every owned call that started before an earlier-starting
// owned call of the same slot had ended (the one ending last), by slot and
// start. Calls that were not owned at their end are ignored: the guarantee
// covers only calls that saw Owned true.
func Overlaps(calls []Record) []Overlap {
	var out []Overlap
	for slot, cs := range ownedBySlot(calls) {
		var prev *Record // the owned call, among those started so far, that ends last
		for i := range cs {
			c := &cs[i]
			if prev != nil && c.Start < prev.End {
				out = append(out, Overlap{Slot: slot, First: *prev, Second: *c})
			}
			if prev == nil || c.End > prev.End {
				prev = c
			}
		}
	}
	slices.SortFunc(out, func(a, b Overlap) int {
		if a.Slot != b.Slot {
			return a.Slot - b.Slot
		}
		return cmpInt64(a.Second.Start, b.Second.Start)
	})
	return out
}

// ownedBySlot groups owned calls by slot, each group sorted by start (then end).
func ownedBySlot(calls []Record) map[int][]Record {
	by := map[int][]Record{}
	for _, c := range calls {
		if c.Owned {
			by[c.Slot] = append(by[c.Slot], c)
		}
	}
	for _, cs := range by {
		slices.SortFunc(cs, func(a, b Record) int {
			if a.Start != b.Start {
				return cmpInt64(a.Start, b.Start)
			}
			return cmpInt64(a.End, b.End)
		})
	}
	return by
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Processed returns the set of contents with at least one owned call (the
// listener returned nil for it).
func Processed(calls []Record) map[string]int {
	done := map[string]int{}
	for _, c := range calls {
		if c.Owned {
			done[c.Content]++
		}
	}
	return done
}

// Missing returns the sent contents that no owned call processed, in sent order.
func Missing(sent []string, calls []Record) []string {
	done := Processed(calls)
	var out []string
	for _, s := range sent {
		if done[s] == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Unexpected returns contents of calls that were never sent, sorted.
func Unexpected(sent []string, calls []Record) []string {
	known := make(map[string]bool, len(sent))
	for _, s := range sent {
		known[s] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range calls {
		if !known[c.Content] && !seen[c.Content] {
			seen[c.Content] = true
			out = append(out, c.Content)
		}
	}
	slices.Sort(out)
	return out
}

// Counts summarizes calls.
type Counts struct {
	Calls      int // listener calls
	Processed  int // calls owned at their end (committed)
	Distinct   int // distinct contents processed
	Duplicates int // Processed − Distinct: processed more than once
	NotOwned   int // calls that found themselves no longer owner (rolled back)
	PerWorker  map[string]WorkerCounts
}

// WorkerCounts are one worker's calls.
type WorkerCounts struct{ Calls, Processed, NotOwned int }

// Count computes the counts of calls.
func Count(calls []Record) Counts {
	c := Counts{Calls: len(calls), PerWorker: map[string]WorkerCounts{}}
	for _, r := range calls {
		w := c.PerWorker[r.Worker]
		w.Calls++
		if r.Owned {
			c.Processed++
			w.Processed++
		} else {
			c.NotOwned++
			w.NotOwned++
		}
		c.PerWorker[r.Worker] = w
	}
	c.Distinct = len(Processed(calls))
	c.Duplicates = c.Processed - c.Distinct
	return c
}
