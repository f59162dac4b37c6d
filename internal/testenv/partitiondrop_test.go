package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// lineEcho echoes every line it reads and hands each to got.
func lineEcho(t *testing.T) (addr string, got chan string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got <- line
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), got
}

// echoOnce dials addr, sends line and returns the reply's error, if any.
func echoOnce(t *testing.T, addr, line string, within time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(within))
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && reply != line+"\n" {
		t.Fatalf("echo of %q: %q", line, reply)
	}
	return err
}

// received fails t unless the server got line within a second.
func received(t *testing.T, got chan string, line string) {
	t.Helper()
	select {
	case l := <-got:
		if l != line+"\n" {
			t.Fatalf("the server got %q, want %q", l, line)
		}
	case <-time.After(time.Second):
		t.Fatalf("the server did not get %q", line)
	}
}

func TestPartitionDropsTheReplyToAMatchingRequestOnce(t *testing.T) {
	target, got := lineEcho(t)
	p := StartPartition(t, target)
	p.DropReplyTo([]byte("claim"))
	if err := echoOnce(t, p.Addr(), "ping", 5*time.Second); err != nil {
		t.Fatalf("a line that does not match: %v", err)
	}
	received(t, got, "ping")
	if err := echoOnce(t, p.Addr(), "claim 5", 5*time.Second); err == nil {
		t.Fatal("the reply to the matching line came back")
	}
	received(t, got, "claim 5") // the server carried it out
	if n := p.Struck(); n != 1 {
		t.Fatalf("struck %d times, want 1", n)
	}
	if err := echoOnce(t, p.Addr(), "claim 6", 5*time.Second); err != nil {
		t.Fatalf("the fault struck twice: %v", err)
	}
	received(t, got, "claim 6")
}

func TestPartitionDropReplyAndCutHoldsTheNextDialUntilHealed(t *testing.T) {
	target, got := lineEcho(t)
	p := StartPartition(t, target)
	p.DropReplyToAndCut([]byte("claim"))
	if err := echoOnce(t, p.Addr(), "claim 5", 5*time.Second); err == nil {
		t.Fatal("the reply to the matching line came back")
	}
	received(t, got, "claim 5")
	if err := echoOnce(t, p.Addr(), "during", 300*time.Millisecond); err == nil {
		t.Fatal("a line sent after the strike came back before the heal")
	}
	p.Heal()
	received(t, got, "during") // held, then let through
	if err := echoOnce(t, p.Addr(), "after", 5*time.Second); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	received(t, got, "after")
}
