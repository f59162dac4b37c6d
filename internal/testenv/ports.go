package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// Cluster nodes take ports from [clusterPortLow, clusterPortHigh): their bus
// ports (P+10000) then lie in 30000–32767, below the kernel's ephemeral range
// (32768 and up), so no outgoing connection can take one meanwhile.
const (
	clusterPortLow  = 20000
	clusterPortHigh = 22768
)

// handedOut holds the ports this process gave a server already, so two
// servers started at once never draw the same one.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// clusterPort returns a random port P of [clusterPortLow, clusterPortHigh)
// such that both P and P+10000 are free on 127.0.0.1.
func clusterPort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 1000 {
		p := clusterPortLow + rand.IntN(clusterPortHigh-clusterPortLow)
		if handedOut.ports[p] || !portFree(p) || !portFree(p+10000) {
			continue
		}
		handedOut.ports[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port pair P, P+10000 in %d–%d", clusterPortLow, clusterPortHigh-1)
}

// freePort returns a free loopback port chosen by the kernel.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
