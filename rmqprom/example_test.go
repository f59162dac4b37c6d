package rmqprom_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// Register the collector of a client and serve it on /metrics.
func ExampleNewCollector() {
	srv, _ := miniredis.Run() // your Redis
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	c, _ := rmq.New(rdb, rmq.WithNamespace("shop"))
	defer c.Close(context.Background())
	ctx := context.Background()
	_ = c.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 64, Type: rmq.Priority})
	_ = c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "price", Content: []byte("sku:42"), Priority: 100})

	reg := prometheus.NewRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	// What a scrape shows (here through httptest rather than a listener):
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "rmq_messages_sent_total") || strings.HasPrefix(line, "rmq_backlog_messages") {
			fmt.Println(line)
		}
	}
	// Output:
	// rmq_backlog_messages{state="dead",topic="price"} 0
	// rmq_backlog_messages{state="prepare",topic="price"} 0
	// rmq_backlog_messages{state="retry",topic="price"} 0
	// rmq_backlog_messages{state="store",topic="price"} 1
	// rmq_messages_sent_total{topic="price"} 1
}
