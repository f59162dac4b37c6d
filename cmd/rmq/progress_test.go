package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// On a terminal, requeue and purge rewrite a progress line in place and
// erase it before the summary; elsewhere they print the summary alone.
func TestRequeueAndPurgeShowProgressOnATerminal(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	seed(t, b, ns)
	flags := []string{addrFlag(b), "-namespace", ns}

	code, out, stderr := rmqCmd(t, "", append([]string{"requeue", "renders", "poison-1"}, flags...)...)
	assert.Equal(t, exitOK, code)
	wantLine(t, out, `^requeued 1 dead message of topic renders$`)
	assert.Empty(t, stderr, "no progress line off a terminal")

	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Writer) bool { return true }
	code, out, stderr = rmqCmd(t, "", append([]string{"requeue", "renders"}, flags...)...)
	assert.Equal(t, exitOK, code)
	wantLine(t, out, `^requeued 2 dead messages of topic renders$`)
	assert.Regexp(t, `^\r\x1b\[Krequeued [12] of 2 dead messages of topic renders \(\d+%\), slot \d of 4, `, stderr)
	assert.Contains(t, stderr, "\r\x1b[Krequeued 2 of 2 dead messages of topic renders (100%), slot ")
	assert.True(t, strings.HasSuffix(stderr, "\r\x1b[K"), "the line is erased at the end: %q", stderr)

	code, out, stderr = rmqCmd(t, "", append([]string{"purge", "jobs", "-yes"}, flags...)...)
	assert.Equal(t, exitOK, code)
	wantLine(t, out, `^purged 1 dead message of topic jobs$`)
	assert.Regexp(t, regexp.MustCompile(`^\r\x1b\[Kpurged 1 of 1 dead messages of topic jobs \(100%\), slot 1 of 1, .*\r\x1b\[K$`), stderr)
}

// The progress line is throttled but always shows the last step.
func TestProgressLineThrottles(t *testing.T) {
	var w strings.Builder
	p := &progressLine{w: &w, verb: "purged"}
	for i := range 1000 {
		p.update(rmq.DeadProgress{Topic: "t", Slot: i, Slots: 1000, Done: int64(i + 1), Total: 1000})
	}
	p.finish()
	lines := strings.Count(w.String(), "\r\x1b[K")
	assert.Less(t, lines, 20, "rewritten at most every 100 ms")
	assert.Contains(t, w.String(), "purged 1000 of 1000 dead messages of topic t (100%), slot 1000 of 1000")
}

// A requeue cut short after its first step (here Ctrl-C, as the progress
// line shows it) says how many dead messages it had moved: they stay moved.
// (It said only "context canceled".)
func TestCutRequeueSaysWhatItDidBefore(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	seed(t, b, ns)
	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Writer) bool { return true }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	stderr := &cutOnWrite{cut: cancel, when: " of 3 dead messages of topic renders"} // its first step
	code := run(ctx, []string{"requeue", "renders", addrFlag(b), "-namespace", ns}, strings.NewReader(""), &out, stderr)
	assert.Equal(t, exitError, code)
	assert.Regexp(t, `requeued [12] dead messages? of topic renders before it failed \(run it again for the rest\): `, stderr.b.String())
	assert.Contains(t, stderr.b.String(), "context canceled")
	assert.Empty(t, out.String())
}

// cutOnWrite is a writer that calls cut once what it was given contains when.
type cutOnWrite struct {
	b    strings.Builder
	cut  func()
	when string
}

func (w *cutOnWrite) Write(p []byte) (int, error) {
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.when) {
		w.cut()
	}
	return len(p), nil
}
