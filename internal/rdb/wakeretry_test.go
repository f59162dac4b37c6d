package rdb

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePublisher records publications and fails the first failures of them.
type fakePublisher struct {
	mu       sync.Mutex
	failures int
	got      []string // channels
	payloads []string
	at       []time.Time
	logged   int
}

func (f *fakePublisher) publish(ctx context.Context, channel string, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, channel)
	f.payloads = append(f.payloads, string(payload))
	f.at = append(f.at, time.Now())
	if f.failures > 0 {
		f.failures--
		return errors.New("node down")
	}
	return nil
}

func (f *fakePublisher) failed(error) {
	f.mu.Lock()
	f.logged++
	f.mu.Unlock()
}

func (f *fakePublisher) snapshot() ([]string, []time.Time, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...), append([]time.Time(nil), f.at...), f.logged
}

// Failures of one topic's wake-up within the first delay go as one
// publication on its broadcast channel; a failed one is tried again after a
// doubled delay, and logged.
func TestWakeRetryPublishesEachTopicOnceAndBacksOff(t *testing.T) {
	f := &fakePublisher{failures: 1}
	r := newWakeRetry(f.publish, f.failed)
	defer r.close()
	start := time.Now()
	r.add("ns:wake:a", nil)
	r.add("ns:wake:a", nil)
	r.add("", nil)
	r.add("ns:wake:b", nil)
	require.Eventually(t, func() bool {
		got, _, _ := f.snapshot()
		return len(got) == 3
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(3 * wakeRetryAfter) // nothing more comes
	got, at, logged := f.snapshot()
	require.Len(t, got, 3, "%v", got)
	assert.ElementsMatch(t, []string{"ns:wake:a", "ns:wake:b"}, got[:2])
	assert.Equal(t, got[0], got[2], "the failed one, again")
	assert.GreaterOrEqual(t, at[0].Sub(start), wakeRetryAfter)
	assert.GreaterOrEqual(t, at[2].Sub(at[0]), 2*wakeRetryAfter, "the delay doubles after a failure")
	assert.Equal(t, 1, logged)
}

// Close drops what is pending and a scheduled run at once, and later adds
// publish nothing.
func TestWakeRetryCloseDropsPending(t *testing.T) {
	f := &fakePublisher{}
	r := newWakeRetry(f.publish, f.failed)
	r.add("ns:wake:a", nil)
	start := time.Now()
	r.close()
	assert.Less(t, time.Since(start), wakeRetryAfter)
	r.add("ns:wake:b", nil)
	time.Sleep(2 * wakeRetryAfter)
	got, _, _ := f.snapshot()
	assert.Empty(t, got)
}

// A publication added "now" goes at once, and takes along what waited for
// the scheduled run.
func TestWakeRetryAddNowBringsTheRunForward(t *testing.T) {
	f := &fakePublisher{}
	r := newWakeRetry(f.publish, f.failed)
	defer r.close()
	start := time.Now()
	r.add("ns:wake:a", nil)
	r.addNow("ns:wake:b", nil)
	require.Eventually(t, func() bool {
		got, _, _ := f.snapshot()
		return len(got) == 2
	}, 5*time.Second, time.Millisecond)
	got, at, _ := f.snapshot()
	assert.ElementsMatch(t, []string{"ns:wake:a", "ns:wake:b"}, got)
	assert.Less(t, at[1].Sub(start), wakeRetryAfter/2)
	r.addNow("ns:wake:a", nil) // nothing scheduled: a run of its own, at once
	require.Eventually(t, func() bool {
		got, _, _ := f.snapshot()
		return len(got) == 3
	}, 5*time.Second, time.Millisecond)
	_, at, _ = f.snapshot()
	assert.Less(t, at[2].Sub(at[1]), wakeRetryAfter/2)
	time.Sleep(2 * wakeRetryAfter)
	got, _, _ = f.snapshot()
	assert.Len(t, got, 3, "nothing more: %v", got)
}

// A publication added "now" while a run is under way comes right after it,
// not after the delay.
func TestWakeRetryAddNowDuringARunFollowsIt(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	var at []time.Time
	publish := func(ctx context.Context, channel string, _ []byte) error {
		if channel == "ns:wake:slow" {
			<-release
		}
		mu.Lock()
		got, at = append(got, channel), append(at, time.Now())
		mu.Unlock()
		return nil
	}
	r := newWakeRetry(publish, func(error) {})
	defer r.close()
	r.addNow("ns:wake:slow", nil)
	time.Sleep(20 * time.Millisecond) // the run is under way, held in its publication
	r.addNow("ns:wake:b", nil)
	released := time.Now()
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 2
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"ns:wake:slow", "ns:wake:b"}, got)
	assert.Less(t, at[1].Sub(released), wakeRetryAfter/2, "the next run followed at once")
}

// A topic's failed wake-ups are published again for the slots they named,
// each with its earliest due time, in slot order, as one publication; a
// payload it cannot read, or a WakeAll, makes it wake every slot, as does a
// failure of more than retryWakeSlots slots. A publication that fails goes
// again the same.
func TestWakeRetryPublishesTheFailedSlots(t *testing.T) {
	f := &fakePublisher{failures: 1}
	r := newWakeRetry(f.publish, f.failed)
	defer r.close()
	r.add("ns:wake:a", []byte("7:300,3:100"))
	r.add("ns:wake:a", []byte("3:50,12:0"))
	r.add("ns:wake:b", []byte("bogus"))
	r.add("ns:wake:c", []byte("1:5"))
	r.add("ns:wake:c", []byte(WakeAll))
	r.add("ns:wake:c", []byte("2:5"))
	require.Eventually(t, func() bool {
		got, _, _ := f.snapshot()
		return len(got) >= 4
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(3 * wakeRetryAfter)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.got, 4, "one publication per topic, and the failed one again")
	byChannel := map[string][]string{}
	for i, ch := range f.got {
		byChannel[ch] = append(byChannel[ch], f.payloads[i])
	}
	want := map[string]string{
		"ns:wake:a": "3:50,7:300,12:0", // merged, the earliest due time per slot
		"ns:wake:b": WakeAll,           // a payload it cannot read
		"ns:wake:c": WakeAll,           // a WakeAll among them
	}
	assert.Equal(t, f.got[0], f.got[3], "the failed publication, again")
	for ch, payloads := range byChannel {
		for _, p := range payloads {
			assert.Equal(t, want[ch], p, ch)
		}
	}

	var many retryWakes
	for slot := range retryWakeSlots {
		many.merge([]byte(strconv.Itoa(slot) + ":0"))
	}
	assert.False(t, many.all)
	assert.Len(t, strings.Split(string(many.payload()), ","), retryWakeSlots)
	many.merge([]byte(strconv.Itoa(retryWakeSlots) + ":0"))
	assert.Equal(t, WakeAll, string(many.payload()), "more slots than a payload names")
	var none retryWakes
	none.merge(nil)
	assert.Equal(t, WakeAll, string(none.payload()), "no payload: every slot")
}
