package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A SendBatch of more than one pipeline (512 messages) whose first
// pipeline's WAIT finds no replica returns ErrNotReplicated, which says the
// messages were stored on the master; the batch's other messages must then
// be stored too (or the error must not be ErrNotReplicated).
func TestSendBatchNotReplicatedStoresEveryPipeline(t *testing.T) {
	addr := testenv.StartRedis(t).Addr()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	c := newClient(t, testenv.Backend{Name: "own", Redis: rc}, rmq.WithReplicaAck(1, 50*time.Millisecond))
	define(t, c, "p", 8, rmq.Priority)
	msgs := make([]rmq.OutgoingMessage, 1000)
	for i := range msgs {
		msgs[i] = rmq.PriorityMessage{Topic: "p", Content: []byte(fmt.Sprint("m", i)), Priority: 20}
	}
	err := c.Producer().SendBatch(context.Background(), msgs...)
	require.ErrorIs(t, err, rmq.ErrNotReplicated)
	stored := stats(t, c, "p").Store
	t.Logf("SendBatch of 1000: %v; stored %d", err, stored)
	assert.Equal(t, int64(1000), stored, "SendBatch said ErrNotReplicated (stored on the master), but left messages unwritten")
}
