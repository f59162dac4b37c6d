package zookeeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/coordinator/zookeeper"
)

// An IPv6 server address without a port ("::1", "[::1]") is refused by New
// with ErrInvalidConfig, as a bad port is. (It passed, and every connection
// failed later with "too many colons" or "missing port": go-zookeeper adds
// the default port only to an address without a ':'.) With its port it is
// accepted.
func TestIPv6ServerWithoutAPortIsInvalidConfig(t *testing.T) {
	for _, server := range []string{"::1", "[::1]", "fe80::1"} {
		_, err := zookeeper.New(zookeeper.Config{Servers: []string{server}, SessionTimeout: 2 * time.Second, WorkerID: "cfg"})
		assert.ErrorIs(t, err, zookeeper.ErrInvalidConfig, "server %q", server)
	}
	z, err := zookeeper.New(zookeeper.Config{Servers: []string{"[::1]:2181", "localhost"}, SessionTimeout: 2 * time.Second, WorkerID: "cfg"})
	if assert.NoError(t, err) {
		_ = z.Close()
	}
}
