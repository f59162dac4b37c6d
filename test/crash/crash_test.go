// Package crash_test is the crash test: a consumer process is killed with
// SIGKILL while its listeners run under load; a fresh consumer process must
// then deliver every message (after the consume timeout for those the dead
// one held in prepare), so that no message is lost.
//
// The consumers are real OS processes: the test binary runs itself again with
// -test.run=^TestCrashHelperProcess$ and crashWorkerEnv set, which turns
// TestCrashHelperProcess into a worker (it returns at once otherwise). A
// worker consumes until its stdin reaches EOF (the parent closes it, or the
// parent died), then stops gracefully and exits 0.
//
// The listener records its work in Redis, all under one hash tag so one
// MULTI covers it:
//
//	<ns>:{crash}:inflight:<worker>  hash  content → attempt, set when the listener
//	                                      starts and deleted when it finishes
//	<ns>:{crash}:deliveries         hash  content → completed deliveries
//
// Processed = HLEN deliveries, duplicates = the sum of deliveries beyond one
// per content, and the inflight hash of the killed worker names the messages
// it was in the middle of when it died. So that the kill surely lands
// mid-listener, worker 1's listener blocks on one message (the first of its
// slot) until the process dies, while its other threads keep consuming; the
// parent kills it once that listener runs and enough messages are processed.
package crash_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Parameters of the crash test.
const (
	crashTopic   = "crash"
	crashSlots   = 16
	crashTimeout = 2 * time.Second
	crashThreads = 8
	crashDelay   = 3 * time.Millisecond
	crashBatch   = 32

	crashFirst  = 1500 // sent before worker 1 starts
	crashDuring = 300  // sent while worker 1 consumes
	crashAfter  = 200  // sent after the kill, before worker 2 starts
	crashTotal  = crashFirst + crashDuring + crashAfter

	// crashRecoveryBound bounds the wait for worker 2 to process everything:
	// a prepare entry is reclaimed between timeout+1s and timeout+2s after its
	// pop, then waits out the first retry backoff (0.5s), then is delivered.
	crashRecoveryBound = crashTimeout + 2*time.Second + 500*time.Millisecond + 15*time.Second
)

func crashDeliveriesKey(ns string) string { return ns + ":{crash}:deliveries" }

func crashInflightKey(ns string, worker int) string {
	return ns + ":{crash}:inflight:" + strconv.Itoa(worker)
}

func crashContent(i int) string { return fmt.Sprintf("crash-msg-%05d", i) }

type crashScenario struct {
	name   string
	typ    rmq.TopicType
	killAt int // processed count (of crashFirst+crashDuring) at which worker 1 dies
}

// TestCrash kills a consumer process with SIGKILL mid-listener under load and
// checks that a fresh consumer delivers every message after the consume
// timeout: nothing lost, nothing left in store, prepare or dead.
func TestCrash(t *testing.T) {
	scenarios := []crashScenario{
		{name: "early-kill", typ: rmq.Priority, killAt: 150},
		{name: "late-kill", typ: rmq.FixedTime, killAt: 1350},
	}
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) { testCrash(t, b, sc) })
		}
	})
}

func testCrash(t *testing.T, b testenv.Backend, sc crashScenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := testenv.Namespace(t, b)
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithConsumeTimeout(crashTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if err := c.DefineTopic(ctx, rmq.Topic{Name: crashTopic, SlotAmount: crashSlots, Type: sc.typ}); err != nil {
		t.Fatal(err)
	}
	deliveriesKey := crashDeliveriesKey(ns)
	// Worker 1's listener blocks on held, so a listener is surely running when
	// worker 1 is killed; the other threads keep consuming meanwhile.
	held := crashContent(0)
	processed := func() (int64, error) { return b.Redis.HLen(ctx, deliveriesKey).Result() }
	atLeast := func(want int64) func() (bool, string, error) {
		return func() (bool, string, error) {
			n, err := processed()
			return n >= want, fmt.Sprintf("%d processed", n), err
		}
	}

	send := func(from, to int) {
		t.Helper()
		const chunk = 50
		for start := from; start < to; start += chunk {
			now := time.Now()
			var msgs []rmq.OutgoingMessage
			for i := start; i < min(start+chunk, to); i++ {
				content := []byte(crashContent(i))
				// The held message comes first in its slot: top priority, earliest time.
				prio, due := int64(17+i%1000), now.Add(60*time.Millisecond+time.Duration(i%40)*time.Millisecond)
				if string(content) == held {
					prio, due = 1<<40, now.Add(50*time.Millisecond)
				}
				switch sc.typ {
				case rmq.Priority:
					msgs = append(msgs, rmq.PriorityMessage{Topic: crashTopic, Content: content, Priority: prio})
				case rmq.FixedTime:
					msgs = append(msgs, rmq.FixedTimeMessage{Topic: crashTopic, Content: content, FixedTime: due})
				}
			}
			if err := c.Producer().SendBatch(ctx, msgs...); err != nil {
				t.Fatalf("send %d..%d: %v", start, start+len(msgs)-1, err)
			}
		}
	}

	// Worker 1 consumes under load and is killed mid-listener.
	send(0, crashFirst)
	w1 := startCrashWorker(t, b, ns, 1, held)
	crashWaitFor(t, "worker 1 to start processing", 20*time.Second, 5*time.Millisecond, atLeast(1), w1)
	send(crashFirst, crashFirst+crashDuring)
	crashWaitFor(t, fmt.Sprintf("worker 1 to process %d messages with %q in its listener", sc.killAt, held),
		20*time.Second, time.Millisecond, func() (bool, string, error) {
			ok, status, err := atLeast(int64(sc.killAt))()
			if err != nil || !ok {
				return ok, status, err
			}
			running, err := b.Redis.HExists(ctx, crashInflightKey(ns, 1), held).Result()
			return running, status + fmt.Sprintf(", %q running: %v", held, running), err
		}, w1)
	w1.kill(t)
	killed := time.Now()

	atKill, err := processed()
	if err != nil {
		t.Fatal(err)
	}
	inflight, err := b.Redis.HKeys(ctx, crashInflightKey(ns, 1)).Result()
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	if atKill >= crashFirst+crashDuring {
		t.Fatalf("worker 1 processed all %d messages before the kill: no crash under load", atKill)
	}
	if st.Prepare == 0 {
		t.Fatalf("prepare is empty right after the kill (stats %+v): the kill did not catch deliveries in flight", st)
	}
	if !slices.Contains(inflight, held) {
		t.Fatalf("the listener of %q was not running at the kill; running: %q", held, inflight)
	}
	t.Logf("killed worker 1 at %d/%d processed (%d committed): prepare %d, store %d, listeners running %d (1 held)",
		atKill, crashFirst+crashDuring, crashFirst+crashDuring-st.Pending()-st.Prepare-st.Dead, st.Prepare, st.Pending(), len(inflight))

	// Worker 2 must process everything: what was left in store at once, what
	// worker 1 held in prepare after the consume timeout.
	send(crashFirst+crashDuring, crashTotal)
	w2 := startCrashWorker(t, b, ns, 2, "")
	crashWaitFor(t, fmt.Sprintf("all %d messages processed", crashTotal), crashRecoveryBound, 20*time.Millisecond,
		func() (bool, string, error) {
			ok, status, err := atLeast(crashTotal)()
			if !ok && err == nil {
				if st, err := c.Stats(ctx, crashTopic); err == nil {
					status += fmt.Sprintf("; store %d, retry %d, prepare %d, dead %d", st.Store, st.Retry, st.Prepare, st.Dead)
				}
			}
			return ok, status, err
		}, w2)
	recovery := time.Since(killed)
	crashWaitFor(t, "store, retry and prepare to empty", 10*time.Second, 20*time.Millisecond, func() (bool, string, error) {
		st, err := c.Stats(ctx, crashTopic)
		return err == nil && st.Store == 0 && st.Retry == 0 && st.Prepare == 0,
			fmt.Sprintf("store %d, retry %d, prepare %d", st.Store, st.Retry, st.Prepare), err
	}, w2)
	w2.stop(t, 15*time.Second)
	w1.checkOutput(t)
	w2.checkOutput(t)

	// Every sent content processed at least once, nothing else, nothing left.
	got, err := b.Redis.HGetAll(ctx, deliveriesKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	var deliveries, maxPer int64
	for i := range crashTotal {
		n, _ := strconv.ParseInt(got[crashContent(i)], 10, 64)
		if n < 1 {
			lost = append(lost, crashContent(i))
		}
		deliveries += n
		maxPer = max(maxPer, n)
	}
	if len(got) != crashTotal-len(lost) {
		t.Errorf("deliveries recorded for %d contents, %d of them never sent", len(got), len(got)-(crashTotal-len(lost)))
	}
	if len(lost) > 0 {
		t.Errorf("lost %d of %d messages, e.g. %q", len(lost), crashTotal, lost[:min(len(lost), 10)])
	}
	for _, content := range inflight {
		if got[content] == "" {
			t.Errorf("message %q, in worker 1's listener at the kill, was never processed", content)
		}
	}
	if left, err := b.Redis.HLen(ctx, crashInflightKey(ns, 2)).Result(); err != nil || left != 0 {
		t.Errorf("worker 2 left %d listeners unfinished (%v)", left, err)
	}
	st, err = c.Stats(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	if st.Store != 0 || st.Retry != 0 || st.Prepare != 0 || st.Dead != 0 {
		t.Errorf("after recovery: store %d, retry %d, prepare %d, dead %d; want all 0", st.Store, st.Retry, st.Prepare, st.Dead)
	}
	t.Logf("%s %s: sent %d, processed %d, lost %d, deliveries %d, duplicates %d (max %d per message), recovery %v after the kill",
		b.Name, sc.name, crashTotal, len(got), len(lost), deliveries, deliveries-int64(len(got)), maxPer,
		recovery.Round(time.Millisecond))
}
