package testenv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer echoes every line it reads; accepted counts its connections.
func echoServer(t *testing.T) (addr string, accepted *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

func TestPartitionHoldsTrafficUntilHealed(t *testing.T) {
	target, accepted := echoServer(t)
	p := StartPartition(t, target)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(line string, within time.Duration) error {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(within))
		got, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if got != line+"\n" {
			t.Fatalf("echo of %q: %q", line, got)
		}
		return nil
	}
	if err := roundTrip("before", 5*time.Second); err != nil {
		t.Fatalf("before the cut: %v", err)
	}

	p.Cut()
	if err := roundTrip("during", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a line sent during the cut came back (%v): the cut let it through", err)
	}
	late, err := net.Dial("tcp", p.Addr()) // accepted by the proxy, not forwarded
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if _, err := late.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := accepted.Load(); n != 1 {
		t.Fatalf("the target accepted %d connections during the cut, want 1 (the one from before)", n)
	}

	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("after the heal, the line held during the cut: %q, %v", got, err)
	}
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := bufio.NewReader(late).ReadString('\n'); err != nil || got != "late\n" {
		t.Fatalf("after the heal, the connection made during the cut: %q, %v", got, err)
	}
	if err := roundTrip("after", 5*time.Second); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
}

func TestPartitionCloseEndsItsConnections(t *testing.T) {
	target, _ := echoServer(t)
	p := StartPartition(t, target)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Cut()
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close of a cut proxy did not return")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection through the closed proxy reads %v, want EOF", err)
	}
}
