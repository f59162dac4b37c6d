package churn

import (
	"slices"
	"testing"
	"time"
)

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

func TestTable(t *testing.T) {
	got := Table([][]string{{"a", "bb", "c"}, {"ddd", "e", "f"}})
	want := "a    bb  c\nddd  e   f\n"
	if got != want {
		t.Fatalf("Table = %q, want %q", got, want)
	}
}
