package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// "rmq stats" shows the oldest due age and the lateness percentiles.
func TestStatsShowsLatenessAndOldestDue(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		seed(t, b, ns) // the three renders were each delivered first once, then died
		c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "idle", SlotAmount: 2, Type: rmq.RangeMerge}))
		require.NoError(t, c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: "idle", Content: []byte("x"), TimeRange: time.Millisecond}))
		require.NoError(t, c.Close(ctx))
		time.Sleep(20 * time.Millisecond)
		flags := []string{addrFlag(b), "-namespace", ns}

		out := mustRun(t, "", append([]string{"stats", "renders"}, flags...)...)
		wantLine(t, out, `^oldest due: none \(no message in store is due\)$`)
		wantLine(t, out, `^lateness \(listener start minus due time, first deliveries, every process\):$`)
		wantLine(t, out, `^\s+P50\s+P90\s+P99\s+FIRST DELIVERIES$`)
		wantLine(t, out, `^last 5 min\s+[\d.]+ (ms|s)\s+[\d.]+ (ms|s)\s+[\d.]+ (ms|s)\s+3$`)
		wantLine(t, out, `^all time\s+[\d.]+ (ms|s)\s+[\d.]+ (ms|s)\s+[\d.]+ (ms|s)\s+3$`)
		wantLine(t, out, `^SLOT\s+STORE\s+RETRY\s+PREPARE\s+DEAD$`)

		out = mustRun(t, "", append([]string{"stats", "idle"}, flags...)...)
		wantLine(t, out, `^oldest due: [\d.]+ (ms|s) \(how long the earliest due message in store has waited\)$`)
		wantLine(t, out, `^last 5 min\s+-\s+-\s+-\s+0$`)
		wantLine(t, out, `^all time\s+-\s+-\s+-\s+0$`)

		out = mustRun(t, "", append([]string{"stats", "orders"}, flags...)...)
		wantLine(t, out, `^oldest due: not measured`)
		wantLine(t, out, `^lateness: not measured \(Priority topics have no due times\)$`)
	})
}
