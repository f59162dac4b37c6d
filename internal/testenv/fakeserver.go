package testenv

import (
	"bufio"
	"net"
	"sync"
	"testing"
)

// FakeServer serves each connection with handle, in a goroutine of its own,
// on a loopback port, and returns its address. When t ends it stops
// listening, closes every connection and waits for the handlers. A handle
// that returns at once leaves its connection open and silent, as a server
// that stopped answering.
func FakeServer(t testing.TB, handle func(c net.Conn, rd *bufio.Reader)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { handle(c, bufio.NewReader(c)) })
		}
	})
	return l.Addr().String()
}
