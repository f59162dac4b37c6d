package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator/zookeeper"
)

// An admin call bounded by a short ctx returns when its ctx ends, and the
// coordinator's Close returns at once, even while another call waits for a
// session with an unreachable ensemble (withContext: "it returns ctx's error
// if ctx ends first").
func TestAdminCallsHeedTheirCtxWhileAnotherConnects(t *testing.T) {
	connecting := func(t *testing.T) (*zookeeper.Coordinator, func()) {
		z, err := zookeeper.New(zookeeper.Config{Servers: []string{"127.0.0.1:1"}, SessionTimeout: 2 * time.Second})
		require.NoError(t, err)
		long, cancelLong := context.WithTimeout(context.Background(), 4*time.Second)
		first := make(chan error, 1)
		go func() { first <- z.RecordTopic(long, "ns", "t", `{"slotAmount":2,"type":"Priority"}`) }()
		time.Sleep(200 * time.Millisecond) // the first call is connecting
		return z, func() { cancelLong(); <-first; _ = z.Close() }
	}
	t.Run("Workers", func(t *testing.T) {
		z, end := connecting(t)
		defer end()
		short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := z.Workers(short, "ns")
		took := time.Since(start)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, time.Second, "Workers with a 200ms ctx returned after %v", took)
	})
	t.Run("Close", func(t *testing.T) {
		z, end := connecting(t)
		defer end()
		start := time.Now()
		closed := make(chan struct{})
		go func() { _ = z.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(time.Second):
			<-closed
			t.Errorf("Close blocked %v while another call waits for a session", time.Since(start))
		}
	})
}
