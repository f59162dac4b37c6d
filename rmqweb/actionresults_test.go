package rmqweb_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

var deadCard = regexp.MustCompile(`<span class="label">Dead</span><span class="value[^"]*">([^<]*)</span>`)

// The page an action leads back to shows the counts after the action: its
// footer says "Counts read from Redis now". (Client.Backlog serves a read up
// to a second old; the page read just before the action is that read.)
func TestPageAfterActionShowsFreshCounts(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		c := seed(t, b)
		base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
		_, page := get(t, hc, base+"topic?t=renders")
		require.Equal(t, "2", deadCard.FindStringSubmatch(page)[1])

		page = action(t, hc, base, "purge", url.Values{"t": {"renders"}, "confirm": {"yes"}})
		assert.Contains(t, page, "Purged 2 dead messages.")
		require.Zero(t, stats(t, c, "renders").Dead)
		m := deadCard.FindStringSubmatch(page)
		require.NotNil(t, m)
		assert.Equal(t, "0", m[1], "the Dead card after the purge")
		assert.False(t, strings.Contains(page, `class="num has-dead"`), "no slot shows dead messages after the purge")
	})
}

// An action on a topic another process deleted is refused with 404 and
// changes nothing, though the dashboard's client still has the topic cached:
// a pause written for a topic that is gone would hold its consumers back if
// it were defined again.
func TestActionOnATopicDeletedElsewhere(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := seed(t, b)
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	_, page := get(t, hc, base+"topic?t=reminders")
	token := csrfOf(t, page)

	other, err := rmq.New(b.Redis, rmq.WithNamespace(c.Namespace()))
	require.NoError(t, err)
	defer other.Close(context.Background())
	require.NoError(t, other.DeleteTopic(ctx, "reminders", rmq.Force()))

	resp, body := post(t, hc, base+"pause", url.Values{"csrf": {token}, "t": {"reminders"}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	flows, err := other.FlowControls(ctx)
	require.NoError(t, err)
	assert.NotContains(t, flows, "reminders", "no flow control written for a deleted topic")
}

// Deleting a dead message needs its content: a form without one is a bad
// request, not "That dead message was already gone."
func TestDeleteWithoutContentIsABadRequest(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	_, page := get(t, hc, base+"topic?t=renders")
	resp, body := post(t, hc, base+"delete", url.Values{"csrf": {csrfOf(t, page)}, "t": {"renders"}, "slot": {"1"}})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Equal(t, int64(2), stats(t, c, "renders").Dead)
}
