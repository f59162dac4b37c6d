package zookeeper

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
)

// maxSessionPaths bounds the paths of the ephemeral nodes one session may
// hold: ZooKeeper logs a session's end with every such path in one
// transaction, and one over jute.maxbuffer (1 MiB by default) cannot be read
// back by the ensemble's followers, which then fail ("Unreasonable
// length") and leave it without a quorum. A worker may come to hold an
// owner node for every slot of its topics; their paths must fit, with room
// for the rest.
const maxSessionPaths = 768 * 1024

// checkSessionSize refuses a member whose topics' owner nodes could not all
// be held by one session (maxSessionPaths): a topic of tens of thousands of
// slots, or thousands of topics.
func checkSessionSize(p nodePaths, topics []coordinator.TopicThreads) error {
	total := 0
	for _, t := range topics {
		// each path: its length (4 bytes) and ".../owners/<topic>/<slot>"
		total += t.SlotAmount * (4 + len(p.owners(t.Topic)) + 1 + len(strconv.Itoa(max(t.SlotAmount-1, 0))))
		if total > maxSessionPaths {
			return fmt.Errorf("%w: the owner nodes of this worker's topics (%d topics, up to %s's %d slots) could take over "+
				"%d bytes of one ZooKeeper session's transaction at its end, which the ensemble could not replay; "+
				"use fewer slots or topics per worker with ZooKeeper, or the Redis coordinator",
				ErrInvalidConfig, len(topics), t.Topic, t.SlotAmount, maxSessionPaths)
		}
	}
	return nil
}

// selfPerms are the rights the coordinator needs on the nodes it creates.
const selfPerms = zk.PermRead | zk.PermWrite | zk.PermCreate | zk.PermDelete

// grantsSelf reports whether acl lets the coordinator's own session (the
// world's, or the digest identity of auth) do what it needs on the nodes it
// creates. An ip entry, which New cannot check against the host, counts.
// Without it, the first nodes would be created where nobody may write them,
// and Run would retry for ever.
func grantsSelf(acl []zk.ACL, auth *DigestAuth) bool {
	for _, a := range acl {
		if a.Perms&selfPerms != selfPerms {
			continue
		}
		switch {
		case a.Scheme == "world", a.Scheme == "ip":
			return true
		case auth != nil && a.Scheme == "auth",
			auth != nil && a.Scheme == "digest" && strings.HasPrefix(a.ID, auth.User+":"):
			return true
		}
	}
	return false
}

// userOf names auth's user, for an error.
func userOf(auth *DigestAuth) string {
	if auth == nil {
		return "(none: no Auth)"
	}
	return auth.User + ":…"
}

// checkServer accepts "host" or "host:port" with a port number: go-zookeeper
// dials a bad one for ever.
func checkServer(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Contains(s, ":") {
			// go-zookeeper adds the default port only to an address
			// without a ':'; an IPv6 literal needs both.
			return errors.New("an IPv6 address needs brackets and a port: [::1]:2181")
		}
		return nil // no port: go-zookeeper adds the default one
	}
	if host == "" {
		return errors.New("no host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number in 1..65535", port)
	}
	return nil
}
