package churn

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// call is a synthetic owned or not-owned call of slot by worker from a to b (ms).
func call(slot int, worker, content string, a, b int64, owned bool) Record {
	return Record{Slot: slot, Key: "k", Content: content, Start: a * ms, End: b * ms, Worker: worker, Owned: owned}
}

func TestOverlapsDetectsOverlap(t *testing.T) {
	calls := []Record{
		call(1, "w1", "a", 0, 10, true),
		call(1, "w2", "b", 5, 15, true), // starts before a ends: violation
		call(2, "w1", "c", 0, 10, true),
		call(2, "w2", "d", 10, 20, true), // starts exactly at c's end: fine
	}
	got := Overlaps(calls)
	if len(got) != 1 {
		t.Fatalf("got %d overlaps, want 1: %v", len(got), got)
	}
	o := got[0]
	if o.Slot != 1 || o.First.Content != "a" || o.Second.Content != "b" {
		t.Fatalf("wrong overlap: %v", o)
	}
	if !strings.Contains(o.String(), "overlaps") || !strings.Contains(o.String(), "5ms") {
		t.Fatalf("String() = %q", o.String())
	}
}

func TestOverlapsIgnoresNotOwnedCalls(t *testing.T) {
	calls := []Record{
		call(3, "w1", "a", 0, 100, false), // a frozen worker's call, not owned at its end
		call(3, "w2", "b", 10, 20, true),
		call(3, "w2", "c", 20, 30, true),
	}
	if got := Overlaps(calls); len(got) != 0 {
		t.Fatalf("got overlaps %v, want none", got)
	}
}

func TestOverlapsComparesWithLongestEarlierCall(t *testing.T) {
	// b is nested in a, and c starts after b's end but before a's end.
	calls := []Record{
		call(0, "w1", "a", 0, 100, true),
		call(0, "w2", "b", 10, 20, true),
		call(0, "w3", "c", 50, 60, true),
	}
	got := Overlaps(calls)
	if len(got) != 2 {
		t.Fatalf("got %d overlaps, want 2: %v", len(got), got)
	}
	for _, o := range got {
		if o.First.Content != "a" {
			t.Errorf("overlap %v should name a as the earlier call", o)
		}
	}
}

func TestMissingDetectsLoss(t *testing.T) {
	sent := []string{"m1", "m2", "m3", "m4"}
	calls := []Record{
		call(0, "w1", "m1", 0, 1, true),
		call(0, "w1", "m2", 1, 2, false), // not owned: rolled back, not processed
		call(0, "w1", "m3", 2, 3, true),
		call(0, "w2", "m3", 3, 4, true), // duplicate
		call(0, "w2", "zz", 4, 5, true), // never sent
	}
	if got := Missing(sent, calls); !slices.Equal(got, []string{"m2", "m4"}) {
		t.Fatalf("Missing = %v, want [m2 m4]", got)
	}
	if got := Unexpected(sent, calls); !slices.Equal(got, []string{"zz"}) {
		t.Fatalf("Unexpected = %v, want [zz]", got)
	}
	c := Count(calls)
	want := Counts{Calls: 5, Processed: 4, Distinct: 3, Duplicates: 1, NotOwned: 1}
	if c.Calls != want.Calls || c.Processed != want.Processed || c.Distinct != want.Distinct ||
		c.Duplicates != want.Duplicates || c.NotOwned != want.NotOwned {
		t.Fatalf("Count = %+v, want %+v", c, want)
	}
	if w := c.PerWorker["w1"]; w != (WorkerCounts{Calls: 3, Processed: 2, NotOwned: 1}) {
		t.Fatalf("w1 counts %+v", w)
	}
}
