package rmqweb_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// Contents are shown cut after 120 bytes, and the topic page's forms name a
// large dead message by its SHA-256 rather than carry it whole (100 dead
// messages of the default 1 MiB content limit would make a page of 267 MB):
// the page stays small however large the contents, and its per-message forms
// still requeue and delete the exact message.
func TestTopicPageSizeDoesNotGrowWithDeadContents(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		keys := rdb.NewKeyspace(c.Namespace())
		big := func(i int) []byte {
			return append(fmt.Appendf(nil, "big-%02d:", i), bytes.Repeat([]byte{0xff}, 100<<10)...)
		}
		for i := range 20 {
			require.NoError(t, b.Redis.ZAdd(ctx, keys.Slot("renders", 2).Dead, redis.Z{Score: float64(time.Now().UnixMilli()), Member: big(i)}).Err())
		}
		base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
		code, page := get(t, hc, base+"topic?t=renders")
		require.Equal(t, http.StatusOK, code)
		assert.Less(t, len(page), 256<<10, "20 dead messages of 100 KiB: a page of %d bytes", len(page))

		// The forms of a row of slot 2 act on its message alone.
		form := func(action string) url.Values {
			row := regexp.MustCompile(`(?s)<tr>\s*<td class="num">2</td>.*?</tr>`).FindString(page)
			require.NotEmpty(t, row, "no dead message of slot 2 listed")
			f := regexp.MustCompile(`(?s)<form method="post" action="` + action + `">(.*?)</form>`).FindStringSubmatch(row)
			require.NotNil(t, f, "no %s form in the row", action)
			v := url.Values{}
			for _, in := range regexp.MustCompile(`name="([a-z]+)" value="([^"]*)"`).FindAllStringSubmatch(f[1], -1) {
				v.Set(in[1], in[2])
			}
			return v
		}
		before := stats(t, c, "renders").Dead
		resp, body := post(t, hc, base+"delete", form("delete"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%.300s", body)
		assert.Equal(t, before-1, stats(t, c, "renders").Dead, "one dead message deleted")
		_, page = get(t, hc, base+"topic?t=renders")
		resp, body = post(t, hc, base+"requeue", form("requeue"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%.300s", body)
		assert.Equal(t, before-2, stats(t, c, "renders").Dead, "one dead message requeued")
		assert.Equal(t, int64(1), stats(t, c, "renders").Slots[2].Store)
	})
}
