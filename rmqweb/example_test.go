package rmqweb_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqweb"
)

// Mount the dashboard under /rmq/ of an existing server, read-only, behind
// a bearer token.
func ExampleHandler() {
	srv, _ := miniredis.Run() // your Redis
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	c, _ := rmq.New(rdb, rmq.WithNamespace("shop"))
	defer c.Close(context.Background())
	_ = c.DefineTopic(context.Background(), rmq.Topic{Name: "price", SlotAmount: 64, Type: rmq.Priority})

	mux := http.NewServeMux()
	mux.Handle("/rmq/", http.StripPrefix("/rmq", rmqweb.Handler(c, rmqweb.Options{
		Title:       "Shop queues",
		BearerToken: "change me", // or put it behind your own authentication
		// AllowWrite: true,      // requeue, purge, delete, cancel
	})))
	// http.ListenAndServe("127.0.0.1:8080", mux)

	web := httptest.NewServer(mux)
	defer web.Close()
	req, _ := http.NewRequest("GET", web.URL+"/rmq/", nil)
	req.Header.Set("Authorization", "Bearer change me")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Println(strings.Contains(string(page), `<a class="topic" href="topic?t=price">price</a>`))
	// Output:
	// 200 OK
	// true
}
