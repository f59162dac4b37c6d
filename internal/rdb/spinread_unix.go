//go:build unix

package rdb

import (
	"errors"
	"net"
	"syscall"
)

// socketPoller returns a function that reads what nc's socket holds without
// waiting: (n > 0, true) with data, (0, true) with none yet, (0, false) when
// the socket is closed, failed, past its read deadline or at its end. It
// returns nil for a connection that exposes no socket.
func socketPoller(nc net.Conn) func(p []byte) (int, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var (
		buf  []byte
		n    int
		rerr error
	)
	once := func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf)
		return true // never wait: the caller decides
	}
	return func(p []byte) (int, bool) {
		buf = p
		err := rc.Read(once)
		buf = nil
		switch {
		case err != nil:
			return 0, false
		case n > 0:
			return n, true
		case rerr == nil: // end of stream
			return 0, false
		case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
			return 0, true
		default:
			return 0, false
		}
	}
}
