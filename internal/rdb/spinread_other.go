//go:build !unix

package rdb

import "net"

// socketPoller returns nil: off Unix the reader always parks.
func socketPoller(net.Conn) func(p []byte) (int, bool) { return nil }
