package churn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

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
