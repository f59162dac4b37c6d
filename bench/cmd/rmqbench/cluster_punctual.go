package main

import (
	"context"
	"slices"
)

// Punctuality on the Cluster: the punctuality scenario's RMQ row (FixedTime
// messages due over 4 s, sent in one go to an idle consumer) on the Cluster
// and on the single server in the same round. On the Cluster the wake-ups go
// to each slot's sharded channel on its master, published by each master's
// pipeline after its entries; the consumer's timers do the rest, as on the
// single server.

const (
	vClPunctCluster = "punctuality, Cluster"
	vClPunctSingle  = "punctuality, single node"
)

// clusterPunctualVariants are the punctuality rows of the cluster scenario.
func clusterPunctualVariants() []variant {
	punctual := func(ctx context.Context, e *env) (metrics, error) { return punctualRMQ(ctx, e, 0) }
	return []variant{
		{"rmq", vClPunctCluster, clusterRun(punctual)},
		{"rmq", vClPunctSingle, punctual},
	}
}

// isClusterPunctual reports whether name is a punctuality row, which the
// throughput table leaves out.
func isClusterPunctual(name string) bool {
	return name == vClPunctCluster || name == vClPunctSingle
}

// reportClusterPunctuality writes the lateness of the punctuality rows.
func reportClusterPunctuality(rep *report, res *scenarioResults) {
	rows := slices.DeleteFunc(slices.Clone(res.order), func(name string) bool { return !isClusterPunctual(name) })
	if len(rows) == 0 {
		return
	}
	rep.printf("Punctuality on the Cluster: the punctuality scenario's RMQ row (%s FixedTime messages due evenly "+
		"between %s and %s ahead, sent with SendBatch to an idle consumer of a %d-slot topic with 16 threads, no "+
		"lookahead) on the Cluster, where each master's pipeline publishes the wake-ups of its entries to the slots' "+
		"sharded channels, and on the single server. Cells: median over rounds (min–max); \"early\" and \"missing\" are totals. "+
		"Redis CPU per message on the Cluster is the sum over all 6 nodes.\n\n",
		thousands(punctualMessages), punctualFirst, punctualFirst+punctualSpan, consumeSlots)
	t := newTable(append([]string{"Variant"}, punctualColumns...)...)
	for _, name := range rows {
		t.add(append([]string{name}, punctualCells(res, name)...)...)
	}
	t.write(rep.w)
}
