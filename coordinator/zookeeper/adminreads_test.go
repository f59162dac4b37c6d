package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// The admin reads say what they could not read: Assignment fails on an
// owner node it may not read (it reported the slot released), and Workers
// lists a worker node it cannot parse, with what it says unknown, beside
// the others (it failed as a whole).
func TestAdminReadsReportWhatTheyCannotRead(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("adminreads-%d", time.Now().UnixNano())
	base := "/rmq-test/" + ns
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	for _, p := range []string{"/rmq-test", base, base + "/workers", base + "/topics", base + "/owners", base + "/owners/t"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	_, err = conn.Create(base+"/topics/t", []byte(`{"slotAmount":2,"type":"Priority"}`), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create(base+"/owners/t/0", []byte(`{"worker":"w","thread":0}`), zk.FlagEphemeral,
		zk.DigestACL(zk.PermAll, "someone-else", "pw"))
	require.NoError(t, err)
	_, err = conn.Create(base+"/workers/good", []byte(`{"id":"good","host":"h","pid":1,"topics":{"t":1},"started":1}`),
		zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create(base+"/workers/odd", []byte("not json"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, slots, err := z.Assignment(ctx, ns, "t")
	assert.ErrorIs(t, err, zk.ErrNoAuth, "an unreadable owner node reported as %v", slots)

	workers, err := z.Workers(ctx, ns)
	require.NoError(t, err)
	ids := []string{}
	for _, w := range workers {
		ids = append(ids, w.ID)
	}
	assert.Equal(t, []string{"good", "odd"}, ids)
}
