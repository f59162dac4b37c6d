package rmqprom_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// Scrape benchmark sizes: a topic of scrapeSlots slots holding
// RMQ_SCRAPE_BENCH_MESSAGES messages (default 10 million).
const (
	scrapeSlots       = 1024
	scrapeDefaultSize = 10_000_000
)

// BenchmarkScrape measures one full scrape (every metric, the backlog read
// from Redis past its one-second cache, the text encoding) of a FixedTime
// topic with 1,024 slots holding 10 million messages on the real Redis.
// Filling takes about a minute and 1 to 2 GB of Redis memory, so it runs only
// when asked:
//
//	cd rmqprom && RMQ_SCRAPE_BENCH=1 RMQ_REDIS_ADDR=127.0.0.1:6379 go test -run X -bench Scrape -benchtime 10x .
//
// It reports ms/scrape (the mean) and logs the median and the worst, with
// the CPU time the hypervisor stole meanwhile.
func BenchmarkScrape(b *testing.B) {
	if os.Getenv("RMQ_SCRAPE_BENCH") != "1" {
		b.Skip("set RMQ_SCRAPE_BENCH=1 (and RMQ_REDIS_ADDR) to fill a real Redis with 10 million messages and scrape it")
	}
	r := realRedis(b)
	size := scrapeDefaultSize
	if s := os.Getenv("RMQ_SCRAPE_BENCH_MESSAGES"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		size = n
	}
	c := scrapeTopic(b, r, size)
	reg := prometheus.NewRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	var took []time.Duration
	steal0 := stealJiffies()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		time.Sleep(1050 * time.Millisecond) // past the backlog cache, as scrapes 15 s apart are
		b.StartTimer()
		t0 := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		took = append(took, time.Since(t0))
		b.StopTimer()
		want := fmt.Sprintf(`rmq_backlog_messages{state="store",topic="scrape"} %s`, strconv.FormatFloat(float64(size), 'g', -1, 64))
		require.Contains(b, rec.Body.String(), want)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	b.ReportMetric(float64(sum)/float64(len(took))/1e6, "ms/scrape")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d scrapes of %d slots, %d messages: median %v, worst %v (target < 100ms); CPU steal meanwhile %d jiffies",
		len(took), scrapeSlots, size, took[len(took)/2].Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond), stealJiffies()-steal0)
}

// scrapeFixture is the filled topic, shared by the benchmark's runs (Go
// runs a benchmark once with b.N = 1 before the real run) and deleted by
// TestMain.
var scrapeFixture struct {
	mu   sync.Mutex
	r    *redis.Client
	ns   string
	size int
	c    *rmq.Client
}

// scrapeTopic returns a client of a namespace whose topic "scrape" holds
// size messages in scrapeSlots slots, filling it on first use.
func scrapeTopic(b *testing.B, r *redis.Client, size int) *rmq.Client {
	f := &scrapeFixture
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.c != nil && f.size == size {
		return f.c
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	ns := "scrape-bench-" + hex.EncodeToString(id[:])
	f.r = redis.NewClient(r.Options())
	f.ns = ns
	c, err := rmq.New(f.r, rmq.WithNamespace(ns))
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, c.DefineTopic(ctx, rmq.Topic{Name: "scrape", SlotAmount: scrapeSlots, Type: rmq.FixedTime}))
	start := time.Now()
	fillStore(b, f.r, ns, "scrape", size)
	b.Logf("filled %d slots with %d messages in %v", scrapeSlots, size, time.Since(start).Round(time.Millisecond))
	f.c, f.size = c, size
	return c
}

// deleteScrapeFixture deletes the benchmark's namespace, if it was filled.
func deleteScrapeFixture() {
	f := &scrapeFixture
	if f.c == nil {
		return
	}
	_ = f.c.Close(context.Background())
	deleteNamespace(f.r, f.ns)
	f.r.Close()
}

// fillStore adds size members to the store sets of topic's slots with
// pipelined ZADDs of 1,000 members, due between an hour ago and a day ahead.
func fillStore(b *testing.B, r *redis.Client, ns, topic string, size int) {
	const perZAdd, perExec, workers = 1000, 50, 2
	nowMs := time.Now().UnixMilli()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			pipe := r.Pipeline()
			for slot := w; slot < scrapeSlots; slot += workers {
				key := fmt.Sprintf("%s:{%s:%d}:store", ns, topic, slot) // the README's key layout
				n := size/scrapeSlots + boolInt(slot < size%scrapeSlots)
				for from := 0; from < n; from += perZAdd {
					zs := make([]redis.Z, 0, perZAdd)
					for j := from; j < min(from+perZAdd, n); j++ {
						zs = append(zs, redis.Z{Score: float64(nowMs - 3_600_000 + int64(j)*9_000), Member: "m" + strconv.Itoa(slot) + "-" + strconv.Itoa(j)})
					}
					pipe.ZAdd(ctx, key, zs...)
					if pipe.Len() == perExec {
						if _, err := pipe.Exec(ctx); err != nil {
							errs <- err
							return
						}
					}
				}
			}
			if _, err := pipe.Exec(ctx); err != nil && pipe.Len() > 0 {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}

func boolInt(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

// stealJiffies returns the CPU time the hypervisor has stolen from this
// machine (the 8th value of /proc/stat's cpu line), 0 where unknown.
func stealJiffies() int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 {
		return 0
	}
	n, _ := strconv.ParseInt(f[8], 10, 64)
	return n
}
