package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/wait"
)

// session is a connection with its negotiated session timeout.
type session struct {
	conn    *zk.Conn
	granted atomic.Int64 // session timeout granted by the server, ns
}

// timeout is the session timeout to plan with: the smaller of asked and granted.
func (s *session) timeout(asked time.Duration) time.Duration {
	if g := time.Duration(s.granted.Load()); g > 0 && g < asked {
		return g
	}
	return asked
}

// connect dials the ensemble and waits until a session is established or
// ctx ends. onEvent, if not nil, receives every session event synchronously
// (it must not block).
func (z *Coordinator) connect(ctx context.Context, onEvent func(zk.Event)) (*session, error) {
	s := &session{}
	hasSession := make(chan struct{}, 1)
	authFailed := make(chan struct{}, 1)
	callback := func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			switch ev.State {
			case zk.StateHasSession:
				signal(hasSession)
			case zk.StateAuthFailed:
				signal(authFailed)
			}
		}
		if onEvent != nil {
			onEvent(ev)
		}
	}
	conn, _, err := zk.Connect(z.cfg.Servers, z.cfg.SessionTimeout,
		zk.WithDialer(cappedDialer(z.cfg.SessionTimeout*2/3, &s.granted)),
		zk.WithEventCallback(callback),
		zk.WithLogger(logAdapter{z.log}),
		zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("rmq: zookeeper connect: %w", err)
	}
	s.conn = conn
	authFailures := 0
	for {
		select {
		case <-hasSession:
			if conn.State() != zk.StateHasSession {
				continue
			}
			if z.cfg.Auth == nil {
				return s, nil
			}
			// Credentials go first on every connection; go-zookeeper sends
			// them again by itself after a reconnect.
			err := conn.AddAuth("digest", []byte(z.cfg.Auth.User+":"+z.cfg.Auth.Password))
			if err == nil {
				return s, nil
			}
			authFailures++
			z.log.Warn("rmq: zookeeper auth failed; retrying", "err", err, "failures", authFailures)
			signal(hasSession)
			wait.Sleep(ctx, backoff.Redis.Delay(authFailures))
		case <-authFailed:
			conn.Close()
			return nil, fmt.Errorf("rmq: zookeeper authentication failed")
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		case <-time.After(z.cfg.SessionTimeout):
			if conn.State() == zk.StateHasSession {
				signal(hasSession)
				continue
			}
			z.log.Warn("rmq: still waiting for a zookeeper session", "servers", z.cfg.Servers, "state", conn.State().String())
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// cappedDialer returns a dialer whose connections never wait longer than
// limit for a read or write. go-zookeeper allows ten times its receive
// timeout for the handshake, so a client that reconnects to a frozen server
// would sit there for several session timeouts; capped, it moves on to the
// next server in time to keep its session. It also reads the session timeout
// the server grants from the handshake reply into granted.
func cappedDialer(limit time.Duration, granted *atomic.Int64) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &cappedConn{Conn: c, limit: limit, granted: granted}, nil
	}
}

// cappedConn caps deadlines and parses the connect response.
type cappedConn struct {
	net.Conn
	limit   time.Duration
	granted *atomic.Int64
	head    []byte // the first bytes read: length prefix and connect response
	done    bool
}

func (c *cappedConn) capped(t time.Time) time.Time {
	if lim := time.Now().Add(c.limit); !t.IsZero() && t.After(lim) {
		return lim
	}
	return t
}

func (c *cappedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.capped(t)) }
func (c *cappedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.capped(t)) }
func (c *cappedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.capped(t)) }

// Read passes through, watching the connect response: a 4-byte length, then
// protocolVersion int32, timeOut int32 (ms), sessionId int64, passwd.
func (c *cappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.head = append(c.head, p[:n]...)
		if len(c.head) >= 12 {
			if ms := int32(binary.BigEndian.Uint32(c.head[8:12])); ms > 0 {
				c.granted.Store(int64(time.Duration(ms) * time.Millisecond))
			}
			c.done, c.head = true, nil
		}
	}
	return n, err
}

// logAdapter routes go-zookeeper's logs to slog at debug level.
type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Printf(format string, args ...any) {
	l.log.Debug("zookeeper: " + fmt.Sprintf(format, args...))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
