package rmqweb_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

var storeCard = regexp.MustCompile(`<span class="label">Store</span><span class="value[^"]*">([^<]*)</span>`)

// The page a cancel leads back to counts what Redis holds after it ("Counts
// read from Redis now"), as after the other actions
// (TestPageAfterActionShowsFreshCounts). (Cancel kept the client's cached
// backlog, and the page still counted the cancelled message.)
func TestCancelActionShowsFreshCounts(t *testing.T) {
	b := testenv.Single(t)
	c := seed(t, b)
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	_, page := get(t, hc, base+"topic?t=orders")
	require.Equal(t, "3", storeCard.FindStringSubmatch(page)[1])

	page = action(t, hc, base, "cancel", url.Values{"t": {"orders"}, "content": {"order-a"}})
	require.Contains(t, page, "Cancelled the pending message.")
	require.Equal(t, int64(2), stats(t, c, "orders").Store, "Redis holds 2 pending orders")
	m := storeCard.FindStringSubmatch(page)
	require.NotNil(t, m)
	assert.Equal(t, "2", m[1], "the Store card after the cancel (footer: counts read from Redis now)")
}

// A topic another process deleted and defined again with more slots is
// shown and changed as Redis holds it: its figures count every slot, "Requeue
// all" requeues the new slots' dead messages too, and a dead message of a
// new slot can be deleted. (Its figures and actions went through the
// dashboard client's cached definition, with the old slots: 20 of 40
// messages counted, nothing requeued, the deletion refused.)
func TestTopicDefinedAgainElsewhereIsShownAndChangedAsItIs(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := seed(t, b) // "renders": RangeMerge, 4 slots; dead in slots 1 and 3
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	code, _ := get(t, hc, base+"topic?t=renders") // the dashboard's client caches the 4-slot definition
	require.Equal(t, http.StatusOK, code)

	other, err := rmq.New(b.Redis, rmq.WithNamespace(c.Namespace()))
	require.NoError(t, err)
	defer other.Close(context.Background())
	require.NoError(t, other.DeleteTopic(ctx, "renders", rmq.Force()))
	require.NoError(t, other.DefineTopic(ctx, rmq.Topic{Name: "renders", SlotAmount: 8, Type: rmq.RangeMerge}))
	for i := range 40 {
		require.NoError(t, other.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: "renders", Content: fmt.Appendf(nil, "m%d", i), TimeRange: time.Hour}))
	}
	keys := rdb.NewKeyspace(c.Namespace())
	require.NoError(t, b.Redis.ZAdd(ctx, keys.Slot("renders", 6).Dead, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "dead-6"}).Err())
	truth, err := other.Stats(ctx, "renders")
	require.NoError(t, err)
	var high int64
	for _, s := range truth.Slots[4:] {
		high += s.Store
	}
	require.Positive(t, high, "some messages wait in slots 4..7")
	time.Sleep(1100 * time.Millisecond) // past the backlog cache

	code, page := get(t, hc, base+"topic?t=renders")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "8 slots")
	m := storeCard.FindStringSubmatch(page)
	require.NotNil(t, m)
	t.Logf("Redis holds store %d (%d of them in slots 4..7), dead %d; the page's Store card says %s", truth.Store, high, truth.Dead, m[1])
	assert.Equal(t, fmt.Sprint(truth.Store), m[1], "the Store card of the topic as Redis holds it")

	// "Requeue all" requeues the dead message of slot 6 too.
	page = action(t, hc, base, "requeue", url.Values{"t": {"renders"}})
	after, err := other.Stats(ctx, "renders")
	require.NoError(t, err)
	t.Logf("after 'requeue all': dead %d in Redis; page notice: %q", after.Dead, noticeOf(page))
	assert.Zero(t, after.Dead, "requeue all left the dead message of slot 6")

	// Deleting a dead message of slot 6 (a slot of the topic) is not a bad request.
	require.NoError(t, b.Redis.ZAdd(ctx, keys.Slot("renders", 6).Dead, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "dead-6b"}).Err())
	_, page = get(t, hc, base+"topic?t=renders")
	resp, body := post(t, hc, base+"delete", url.Values{"csrf": {csrfOf(t, page)}, "t": {"renders"}, "slot": {"6"},
		"content": {"ZGVhZC02Yg"}}) // base64url("dead-6b")
	t.Logf("delete slot 6: status %d", resp.StatusCode)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, noticeOf(body))
}

func noticeOf(page string) string {
	if i := strings.Index(page, "<main"); i >= 0 {
		page = page[i:]
	}
	if len(page) > 400 {
		page = page[:400]
	}
	return page
}
