package rdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// dial connects and runs the handshake: AUTH, SELECT and CLIENT SETNAME as
// the options ask, each reply checked.
func (s *sendStream) dial() (*streamConn, error) {
	return dialConn(context.Background(), s.opt, s.spin)
}

// dialConn connects to the node of o and runs the handshake its options ask
// for, unless ctx ends first; the reader polls up to spin times while
// replies are owed.
func dialConn(ctx context.Context, o *redis.Options, spin int) (*streamConn, error) {
	if o.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DialTimeout)
		defer cancel()
	}
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("rdb: dial %s: %w", o.Addr, err)
	}
	cn := newStreamConn(nc, o.ReadTimeout, spin)
	cn.lastUsed = time.Now()
	cn.maxIdle = o.ConnMaxIdleTime
	if o.ConnMaxLifetime > 0 {
		life := o.ConnMaxLifetime
		if j := o.ConnMaxLifetimeJitter; j > 0 {
			life += rand.N(2*j+1) - j
		}
		cn.retireAt = cn.lastUsed.Add(life)
	}
	cmds, err := handshake(ctx, o)
	if err == nil {
		err = cn.handshake(ctx, cmds)
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("rdb: connect to %s: %w", o.Addr, err)
	}
	return cn, nil
}

// handshake returns the commands that prepare a new connection to the node
// of o.
func handshake(ctx context.Context, o *redis.Options) ([][]string, error) {
	var cmds [][]string
	user, pass := o.Username, o.Password
	switch {
	case o.CredentialsProviderContext != nil:
		u, p, err := o.CredentialsProviderContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		user, pass = u, p
	case o.CredentialsProvider != nil:
		user, pass = o.CredentialsProvider()
	}
	switch {
	case pass != "" && user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case pass != "":
		cmds = append(cmds, []string{"AUTH", pass})
	}
	if o.DB != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(o.DB)})
	}
	if o.ClientName != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", o.ClientName})
	}
	return cmds, nil
}
