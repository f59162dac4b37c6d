package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// startRedis starts a redis-server of the test's own on a free loopback
// port (the scenarios empty the Redis they are given) and stops it, by its
// process, when t ends. Without redis-server the test skips, or fails where
// servers are required (CI=true or RMQ_REQUIRE_SERVERS=1).
func startRedis(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("RMQ_REQUIRE_SERVERS") == "1" {
			t.Fatal("redis-server not found in PATH, and servers are required")
		}
		t.Skip("redis-server not found in PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := newRedis(addr)
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for r.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}
