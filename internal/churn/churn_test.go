package churn

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

func TestMeasureRebalance(t *testing.T) {
	// 3 slots. Before the event at 1000 ms: w1 serves 0 and 1, w2 serves 2.
	// w1 leaves at 1000: slot 0 goes on with w1 until 1100 (draining) and then
	// w2 takes it at 1400; slot 1 goes to w2 at 1250; slot 2 stays with w2.
	calls := []Record{
		call(0, "w1", "a", 900, 905, true),
		call(1, "w1", "b", 950, 955, true),
		call(2, "w2", "c", 990, 995, true),
		call(0, "w1", "d", 1100, 1105, true),
		call(2, "w2", "e", 1050, 1055, true),
		call(1, "w2", "f", 1250, 1255, true),
		call(1, "w1", "g", 1200, 1300, false), // not owned: ignored
		call(0, "w2", "h", 1400, 1405, true),
		call(0, "w2", "i", 1500, 1505, true),
		call(2, "w2", "j", 2100, 2105, true), // after the window
	}
	ev := Event{Name: "stop w1", At: 1000 * ms}
	r := Measure(calls, 3, ev, 2000*ms)
	if r.AllServed != 250*time.Millisecond || r.LastSlot != 1 {
		t.Errorf("AllServed = %v (slot %d), want 250ms (slot 1)", r.AllServed, r.LastSlot)
	}
	if r.Settled != 400*time.Millisecond || r.SettledSlot != 0 {
		t.Errorf("Settled = %v (slot %d), want 400ms (slot 0)", r.Settled, r.SettledSlot)
	}
	if r.Moved != 2 {
		t.Errorf("Moved = %d, want 2", r.Moved)
	}
	if len(r.Unserved) != 0 {
		t.Errorf("Unserved = %v", r.Unserved)
	}

	// A window in which slots 1 and 2 have no owned call: never served.
	r = Measure(calls, 3, Event{Name: "late", At: 1300 * ms}, 2000*ms)
	if !slices.Equal(r.Unserved, []int{1, 2}) || r.AllServed >= 0 || r.Settled >= 0 {
		t.Errorf("late window: %+v, want slots 1 and 2 unserved and negative times", r)
	}
	if FormatDuration(r.AllServed) != "never" || FormatDuration(1500*time.Millisecond) != "1.500s" {
		t.Errorf("FormatDuration")
	}
}

func TestGaps(t *testing.T) {
	calls := []Record{
		call(0, "w1", "a", 100, 101, true),
		call(0, "w1", "b", 300, 301, true),
		call(1, "w1", "c", 100, 101, true),
		call(1, "w2", "d", 900, 901, true),
		call(1, "w2", "e", 950, 951, false), // not owned: does not close a gap
	}
	g := Gaps(calls, 2, 0, 1000*ms)
	if len(g) != 2 || g[0].Slot != 1 || g[0].Len() != 800*time.Millisecond || g[0].From != 100*ms {
		t.Fatalf("Gaps = %+v, want slot 1 with 800ms from 100ms first", g)
	}
	if g[1].Slot != 0 || g[1].Len() != 700*time.Millisecond || g[1].From != 300*ms {
		t.Fatalf("Gaps = %+v, want slot 0 with 700ms from 300ms (to the end)", g)
	}
}

func TestWriterAndReadFiles(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "w1.jsonl"), filepath.Join(dir, "w2.jsonl")
	w, err := Create(p1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := w.Write(call(g, "w1", fmt.Sprintf("m-%d-%d", g, i), int64(i), int64(i+1), i%2 == 0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Write(Record{Worker: "w1", Mark: MarkStart, Start: 42}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// w2's log ends with a torn line, as after a kill mid-write.
	if err := os.WriteFile(p2, []byte(`{"slot":1,"content":"x","start":1,"end":2,"worker":"w2","owned":true}`+"\n"+`{"slot":1,"con`), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadFiles(p1, p2, filepath.Join(dir, "absent.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != 8*200+1 || len(l.Marks) != 1 || l.Torn != 1 {
		t.Fatalf("read %d calls, %d marks, %d torn; want %d, 1, 1", len(l.Calls), len(l.Marks), l.Torn, 8*200+1)
	}
	if l.Mark("w1", MarkStart) != 42 || l.Mark("w2", MarkStart) != 0 {
		t.Fatalf("Mark lookups wrong")
	}

	// A garbled line in the middle is an error, not a silent skip.
	p3 := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(p3, []byte("{\"slot\":1}\nnot json\n{\"slot\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFiles(p3); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Fatalf("ReadFiles of a garbled log: err = %v, want one naming line 2", err)
	}
}

func TestTable(t *testing.T) {
	got := Table([][]string{{"a", "bb", "c"}, {"ddd", "e", "f"}})
	want := "a    bb  c\nddd  e   f\n"
	if got != want {
		t.Fatalf("Table = %q, want %q", got, want)
	}
}
