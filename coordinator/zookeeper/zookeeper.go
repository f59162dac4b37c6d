// Package zookeeper is the coordinator for many processes: workers register
// in a ZooKeeper ensemble, one elected worker computes the assignment of
// slots to worker threads, and each worker claims its slots with ephemeral
// owner nodes whose creation zxids are the fencing tokens Redis checks.
//
//	coord, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq"})
//	c, err := rmq.New(rdb, rmq.WithCoordinator(coord))
//
// It lives in a package of its own so that programs that do not use it do
// not link a ZooKeeper client.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
)

// ErrInvalidConfig is returned by New and Run for a bad configuration.
var ErrInvalidConfig = errors.New("rmq: invalid zookeeper config")

// ErrClosed is returned by the calls of a Coordinator after its Close (a Run
// started before goes on until its context ends).
var ErrClosed = errors.New("rmq: zookeeper coordinator closed")

// DigestAuth is ZooKeeper digest authentication ("user:password").
type DigestAuth struct {
	User     string
	Password string
}

// Config configures the ZooKeeper coordinator.
type Config struct {
	// Servers are the ensemble's client addresses, "host:port". Required.
	Servers []string
	// SessionTimeout is the ZooKeeper session timeout. Default 10s. A worker
	// that cannot reach ZooKeeper stops consuming within half of it; a crashed
	// worker's slots move after it. The server clamps it to 2..20 × its
	// tickTime; the coordinator uses the smaller of asked and granted.
	SessionTimeout time.Duration
	// Root is the path under which every namespace keeps its nodes. Default "/rmq".
	Root string
	// Auth, when set, authenticates the session with digest auth, and every
	// node the coordinator creates is readable and writable by that identity
	// only (ACL "auth"), unless ACL says otherwise. Never world-writable.
	Auth *DigestAuth
	// ACL overrides the ACL of created nodes. Without Auth the default is
	// world-all (ZooKeeper's open default); with Auth it may not grant
	// anything but read to the world.
	ACL []zk.ACL
	// WorkerID names this process among the workers. Default
	// "<host>-<pid>-<random>"; must be unique among live workers. A process
	// restarted under the id of one that crashed joins once the crashed
	// one's session expires (it waits up to twice SessionTimeout; after
	// that Run ends with an error: the id is a live worker's).
	WorkerID string
	// Logger receives the coordinator's logs. Default: silent.
	Logger *slog.Logger
	// PollInterval is how often a worker looks for changes (the assignment,
	// the election, and for the leader the members) when nothing is under
	// way; during a handover it looks every 25ms. Each look is one or two
	// reads per topic. Default 250ms; range 25ms..10s.
	PollInterval time.Duration
}

// Coordinator is the ZooKeeper coordinator: workers register in ZooKeeper,
// one elected worker computes the assignment of slots to worker threads, and
// each worker claims its slots with ephemeral owner nodes. A slot is claimed
// only after its previous owner deleted its node (having stopped and
// settled) or lost its session; see the README for the protocol.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	acl []zk.ACL

	mu    sync.Mutex
	admin *zk.Conn // for RecordTopic and the admin reads; lazily connected
	// connecting is closed when the admin connection under way (made
	// outside mu, so that a caller whose ctx ends, and Close, need not wait
	// for it) succeeds or fails; nil when none is. stopConnect ends it.
	connecting  chan struct{}
	stopConnect context.CancelFunc
	closed      bool // Close was called: every call fails with ErrClosed
}

var (
	_ coordinator.Coordinator   = (*Coordinator)(nil)
	_ coordinator.TopicRecorder = (*Coordinator)(nil)
	_ coordinator.TopicRemover  = (*Coordinator)(nil)
	_ coordinator.Kinded        = (*Coordinator)(nil)
)

// New validates cfg and returns the coordinator. It connects when
// first used (DefineTopic or Start of the rmq client).
func New(cfg Config) (*Coordinator, error) {
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrInvalidConfig)
	}
	for _, s := range cfg.Servers {
		if err := checkServer(s); err != nil {
			return nil, fmt.Errorf("%w: server address %q: %v", ErrInvalidConfig, s, err)
		}
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.SessionTimeout < time.Second || cfg.SessionTimeout > 10*time.Minute {
		return nil, fmt.Errorf("%w: session timeout %v outside 1s..10m", ErrInvalidConfig, cfg.SessionTimeout)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.PollInterval < 25*time.Millisecond || cfg.PollInterval > 10*time.Second {
		return nil, fmt.Errorf("%w: poll interval %v outside 25ms..10s", ErrInvalidConfig, cfg.PollInterval)
	}
	if cfg.Root == "" {
		cfg.Root = "/rmq"
	}
	if !strings.HasPrefix(cfg.Root, "/") || strings.HasSuffix(cfg.Root, "/") || strings.Contains(cfg.Root, "//") {
		return nil, fmt.Errorf("%w: root %q must be an absolute path without a trailing slash", ErrInvalidConfig, cfg.Root)
	}
	if cfg.Root != "/" {
		for _, c := range strings.Split(cfg.Root[1:], "/") {
			if err := checkNodeName(c); err != nil {
				return nil, fmt.Errorf("%w: root %q: component %q: %v", ErrInvalidConfig, cfg.Root, c, err)
			}
		}
	}
	if cfg.Auth != nil && (cfg.Auth.User == "" || strings.Contains(cfg.Auth.User, ":")) {
		return nil, fmt.Errorf("%w: digest user must be non-empty and without ':'", ErrInvalidConfig)
	}
	acl := cfg.ACL
	if acl != nil && len(acl) == 0 {
		return nil, fmt.Errorf("%w: an empty ACL (nil for the default)", ErrInvalidConfig)
	}
	for _, a := range acl {
		if a.Scheme == "auth" && cfg.Auth == nil {
			return nil, fmt.Errorf("%w: an auth ACL needs Auth", ErrInvalidConfig)
		}
	}
	switch {
	case acl == nil && cfg.Auth != nil:
		acl = zk.AuthACL(zk.PermAll)
	case acl == nil:
		acl = zk.WorldACL(zk.PermAll)
	case cfg.Auth != nil:
		for _, a := range acl {
			if a.Scheme == "world" && a.Perms&^zk.PermRead != 0 {
				return nil, fmt.Errorf("%w: with auth, the world may only read", ErrInvalidConfig)
			}
		}
	}
	if !grantsSelf(acl, cfg.Auth) {
		return nil, fmt.Errorf("%w: the ACL must let the coordinator itself read, write, create and delete "+
			"(the world without Auth; with Auth, scheme auth or digest %s)", ErrInvalidConfig, userOf(cfg.Auth))
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(3))
	}
	if err := checkNodeName(cfg.WorkerID); err != nil {
		return nil, fmt.Errorf("%w: worker id %q: %v", ErrInvalidConfig, cfg.WorkerID, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Coordinator{cfg: cfg, log: log, acl: acl}, nil
}

// Kind implements coordinator.Kinded: "zookeeper". Processes of one
// namespace must all use the same kind of coordinator.
func (z *Coordinator) Kind() string { return "zookeeper" }

// WorkerID returns the id this process registers under.
func (z *Coordinator) WorkerID() string { return z.cfg.WorkerID }

// Run implements coordinator.Coordinator: it joins the group with its own
// ZooKeeper session, which ends when Run returns. When m.Abandoned closes, it
// takes every lease away without waiting for releases, and returns.
func (z *Coordinator) Run(ctx context.Context, m coordinator.Member, h coordinator.Handler) error {
	if err := checkNodeName(m.Namespace); err != nil {
		return fmt.Errorf("%w: namespace %q: %v", ErrInvalidConfig, m.Namespace, err)
	}
	if err := checkSessionSize(newNodePaths(z.cfg.Root, m.Namespace), m.Topics); err != nil {
		return err
	}
	z.mu.Lock()
	closed := z.closed
	z.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return newMembership(z, m, h).run(ctx)
}

// RecordTopic implements coordinator.TopicRecorder.
func (z *Coordinator) RecordTopic(ctx context.Context, namespace, name, def string) error {
	conn, err := z.adminConn(ctx)
	if err != nil {
		return err
	}
	p := newNodePaths(z.cfg.Root, namespace)
	return withContext(ctx, func() error {
		if err := ensurePath(conn, p.topics(), z.acl); err != nil {
			return err
		}
		return recordTopic(conn, p, name, def, z.acl)
	})
}

// RemoveTopic implements coordinator.TopicRemover: it deletes the topic's
// definition, assignment and owner nodes (an owner node of a live worker
// belongs to its session and is left).
func (z *Coordinator) RemoveTopic(ctx context.Context, namespace, name string) error {
	conn, err := z.adminConn(ctx)
	if err != nil {
		return err
	}
	p := newNodePaths(z.cfg.Root, namespace)
	return withContext(ctx, func() error {
		for _, path := range []string{p.topic(name), p.assignment(name)} {
			if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("rmq: zookeeper delete %s: %w", path, err)
			}
		}
		owners, _, err := conn.Children(p.owners(name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("rmq: zookeeper owners of %s: %w", name, err)
		}
		if len(owners) == 0 {
			if err := conn.Delete(p.owners(name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) &&
				!errors.Is(err, zk.ErrNotEmpty) {
				return fmt.Errorf("rmq: zookeeper delete %s: %w", p.owners(name), err)
			}
		}
		return nil
	})
}

// Close closes the connection used for topic definitions and admin reads,
// and ends one under way (its caller gets an error). It is final: every
// later call fails with ErrClosed, a later Run included. A running Run is
// not affected; it ends with its context. Closing again does nothing.
func (z *Coordinator) Close() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.stopConnect != nil {
		z.stopConnect() // its caller gets the ctx's error
	}
	if z.admin != nil {
		z.admin.Close()
		z.admin = nil
	}
	return nil
}

// adminConn returns the shared admin connection, connecting on first use.
// One caller connects at a time; the others wait for it within their own
// ctx, and try themselves if it failed.
func (z *Coordinator) adminConn(ctx context.Context) (*zk.Conn, error) {
	for {
		z.mu.Lock()
		if z.closed {
			z.mu.Unlock()
			return nil, ErrClosed
		}
		if z.admin != nil && z.admin.State() != zk.StateDisconnected {
			conn := z.admin
			z.mu.Unlock()
			return conn, nil
		}
		if wait := z.connecting; wait != nil {
			z.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if z.admin != nil {
			z.admin.Close()
			z.admin = nil
		}
		done := make(chan struct{})
		connectCtx, stop := context.WithCancel(ctx)
		z.connecting, z.stopConnect = done, stop
		z.mu.Unlock()

		conn, err := z.connect(connectCtx, nil)
		z.mu.Lock()
		z.connecting, z.stopConnect = nil, nil
		close(done)
		stopped := connectCtx.Err() != nil && ctx.Err() == nil // Close ended it
		stop()
		switch {
		case err != nil:
			z.mu.Unlock()
			return nil, err
		case stopped:
			z.mu.Unlock()
			conn.conn.Close()
			return nil, ErrClosed
		}
		z.admin = conn.conn
		z.mu.Unlock()
		return conn.conn, nil
	}
}

// withContext runs a blocking ZooKeeper call; it returns ctx's error if ctx
// ends first (the call goes on in the background and its result is dropped).
func withContext(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
