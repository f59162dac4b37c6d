package rmq

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
)

func TestUnansweredNote(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: fmt.Errorf("i/o timeout: %w", context.DeadlineExceeded)}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connection refused")}
	reply := rdb.ReplyError("CLUSTERDOWN The cluster is down")
	quick, slow := time.Millisecond, unansweredAfter
	cases := []struct {
		name string
		was  bool
		err  error
		took time.Duration
		want bool
	}{
		{"an answer", true, nil, slow, false},
		{"an error reply", true, reply, quick, false},
		{"an error reply after a while", false, reply, slow, true},
		{"a read timing out", false, timeout, quick, true},
		{"a refused dial", false, refused, quick, true},
		{"a deadline", false, fmt.Errorf("claim: %w", context.DeadlineExceeded), quick, true},
		{"a master left behind", false, rdb.ErrUnanswered, quick, true},
		{"a quick cancellation after silence", true, context.Canceled, quick, true},
		{"a quick cancellation after an answer", false, context.Canceled, quick, false},
		{"a cancellation after a while", false, context.Canceled, slow, true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, unansweredNote(c.was, c.err, c.took), c.name)
	}
}
