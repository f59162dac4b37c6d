package testenv

import (
	"context"
	"fmt"

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
// the master to: CLUSTER SETSLOT … NODE on to first, then on every other
// master.
func (c *PrivateCluster) GiveSlot(ctx context.Context, hashSlot int, to ClusterMaster) error {
	ms, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	order := []string{to.Addr}
	for _, m := range ms {
		if m.Addr != to.Addr {
			order = append(order, m.Addr)
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
