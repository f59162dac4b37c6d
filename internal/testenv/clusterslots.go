package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotMove returns the master serving hashSlot and another master, to
// which a test may move it.
func (c *PrivateCluster) SlotMove(ctx context.Context, hashSlot int) (from, to ClusterMaster, err error) {
	ms, err := c.Masters(ctx)
	if err != nil {
		return from, to, err
	}
	for _, m := range ms {
		if (ClusterNode{Slots: m.Slots}).OwnsSlot(hashSlot) {
			from = m
		} else if to.Addr == "" {
			to = m
		}
	}
	if from.Addr == "" || to.Addr == "" {
		return from, to, fmt.Errorf("hash slot %d: no master serves it, or no other master", hashSlot)
	}
	return from, to, nil
}

// GiveSlot hands hashSlot, which holds no key (or whose keys have moved), to
// the master to, as redis-cli --cluster reshard does: CLUSTER SETSLOT …
// IMPORTING on to (unless it serves the slot already; again if
// StartMigration set it), then SETSLOT … NODE on to, then on every other
// master. A node that was importing the slot raises its config epoch as it
// takes it, so its claim outranks the old master's in the Cluster's gossip;
// without it a new master whose epoch is lower than the old one's gives the
// slot back if the old master's claim reaches it before that master is told,
// and the nodes stay split on who serves it (seen with the old master told
// 0.5 s later: the two masters each named the other).
func (c *PrivateCluster) GiveSlot(ctx context.Context, hashSlot int, to ClusterMaster) error {
	ms, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	order := []string{to.Addr}
	for _, m := range ms {
		if m.Addr == to.Addr {
			continue
		}
		order = append(order, m.Addr)
		if (ClusterNode{Slots: m.Slots}).OwnsSlot(hashSlot) {
			if err := c.SetSlot(ctx, to.Addr, hashSlot, "IMPORTING", m.ID); err != nil {
				return err
			}
		}
	}
	for _, addr := range order {
		if err := c.SetSlot(ctx, addr, hashSlot, "NODE", to.ID); err != nil {
			return err
		}
	}
	return nil
}

// SetSlot runs CLUSTER SETSLOT hashSlot args… on the node at addr.
func (c *PrivateCluster) SetSlot(ctx context.Context, addr string, hashSlot int, args ...any) error {
	_, err := nodeCommand(ctx, addr, func(ctx context.Context, rc *redis.Client) (string, error) {
		return "", rc.Do(ctx, append([]any{"CLUSTER", "SETSLOT", hashSlot}, args...)...).Err()
	})
	if err != nil {
		return fmt.Errorf("CLUSTER SETSLOT %d %v on %s: %w", hashSlot, args, addr, err)
	}
	return nil
}

// StartMigration sets hashSlot migrating from the master from to the master
// to, as redis-cli --cluster reshard does before it moves the keys: CLUSTER
// SETSLOT … IMPORTING on to, then MIGRATING on from.
func (c *PrivateCluster) StartMigration(ctx context.Context, hashSlot int, from, to ClusterMaster) error {
	if err := c.SetSlot(ctx, to.Addr, hashSlot, "IMPORTING", from.ID); err != nil {
		return err
	}
	return c.SetSlot(ctx, from.Addr, hashSlot, "MIGRATING", to.ID)
}

// FinishMigration moves the keys of hashSlot, migrating (StartMigration),
// from from to to with MIGRATE, ten keys a call as redis-cli does, and then
// hands the slot to to (GiveSlot). It returns how long the MIGRATE calls
// took together and how many keys they moved.
func (c *PrivateCluster) FinishMigration(ctx context.Context, hashSlot int, from, to ClusterMaster) (time.Duration, int, error) {
	return c.finishMigration(ctx, hashSlot, from, to, 10, 0)
}

// FinishMigrationSlowly is FinishMigration one key a call, with a pause
// between calls: the slot's keys stay split between the two masters for a
// while, as in a resharding slowed by a loaded network.
func (c *PrivateCluster) FinishMigrationSlowly(ctx context.Context, hashSlot int, from, to ClusterMaster, pause time.Duration) (time.Duration, int, error) {
	return c.finishMigration(ctx, hashSlot, from, to, 1, pause)
}

func (c *PrivateCluster) finishMigration(ctx context.Context, hashSlot int, from, to ClusterMaster, perCall int, pause time.Duration) (time.Duration, int, error) {
	src := redis.NewClient(&redis.Options{Addr: from.Addr})
	defer src.Close()
	var took time.Duration
	moved := 0
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, hashSlot, perCall).Result()
		if err != nil {
			return took, moved, err
		}
		if len(keys) == 0 {
			break
		}
		if moved > 0 && pause > 0 {
			time.Sleep(pause)
		}
		start := time.Now()
		if err := migrate(ctx, src, to, keys); err != nil {
			return took, moved, err
		}
		took += time.Since(start)
		moved += len(keys)
	}
	return took, moved, c.GiveSlot(ctx, hashSlot, to)
}

// MigrateKeys moves keys, all of one hash slot that StartMigration set
// migrating from the master from to the master to, in one MIGRATE: a test
// splits the slot's keys between the two masters by the keys it names.
func (c *PrivateCluster) MigrateKeys(ctx context.Context, from, to ClusterMaster, keys ...string) error {
	src := redis.NewClient(&redis.Options{Addr: from.Addr})
	defer src.Close()
	return migrate(ctx, src, to, keys)
}

// migrate moves keys from the node of src to the master to.
func migrate(ctx context.Context, src *redis.Client, to ClusterMaster, keys []string) error {
	host, port, _ := strings.Cut(to.Addr, ":")
	args := []any{"MIGRATE", host, port, "", 0, 60000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	if err := src.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("MIGRATE %v from %s: %w", keys, src.Options().Addr, err)
	}
	return nil
}
