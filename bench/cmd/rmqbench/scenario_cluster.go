package main

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/rmq-go/rmq"
)

// Cluster: RMQ on a private 6-node Redis Cluster (3 masters, 3 replicas, all
// on this machine) against the single server, the same code in the same
// round: the produce scenario's Send and SendBatch and the consume
// scenario's drain, each on a 64-slot Priority topic whose slots spread over
// the masters by their hash tags.

const (
	vClSendCluster    = "Send, Cluster"
	vClSendSingle     = "Send, single node"
	vClSendPipe       = "Send, single node, WithSendStream(false)"
	vClBatchCluster   = "SendBatch, Cluster"
	vClBatchSingle    = "SendBatch, single node"
	vClConsumeCluster = "consume, Cluster"
	vClConsumeSingle  = "consume, single node"
	vClSendAck        = "Send, Cluster, WithReplicaAck(1, 500ms)"
	vClBatchAck       = "SendBatch, Cluster, WithReplicaAck(1, 500ms)"
)

// replicaAck is the acknowledgement the *Ack variants wait for.
var replicaAck = rmq.WithReplicaAck(1, 500*time.Millisecond)

type runFunc = func(ctx context.Context, e *env) (metrics, error)

var clusterScenario = &scenario{
	key: "cluster",
	variants: func(cfg *config) []variant {
		g := cfg.produceGoroutines
		drain := func(ctx context.Context, e *env) (metrics, error) {
			return rmqDrain(ctx, e, consumeSlots, e.rmqThreads, e.rmqBatch)
		}
		return append([]variant{
			{"rmq", vClSendCluster, clusterRun(produceRMQSend)},
			{"rmq", vClSendSingle, produceRMQSend},
			{"rmq", vClBatchCluster, clusterRun(produceRMQBatch)},
			{"rmq", vClBatchSingle, produceRMQBatch},
			{"rmq", vClConsumeCluster, clusterRun(drain)},
			{"rmq", vClConsumeSingle, drain},
			{"rmq", vClSendPipe, produceRMQSendPipelined},
			{"rmq", vClSendAck, clusterRun(func(ctx context.Context, e *env) (metrics, error) {
				return produceRMQ(ctx, e, func(ctx context.Context, p *rmq.Producer, msgs []rmq.OutgoingMessage) error {
					return parallel(len(msgs), e.produceGoroutines, func(i int) error { return p.Send(ctx, msgs[i]) })
				}, replicaAck)
			})},
			{"rmq", vClBatchAck, clusterRun(func(ctx context.Context, e *env) (metrics, error) {
				return produceRMQ(ctx, e, sendBatches, replicaAck)
			})},
			{"bare", rawClusterName(true, false, g), clusterRun(produceRawDuplex(false))},
			{"bare", rawClusterName(false, false, g), produceRawDuplex(false)},
			{"bare", rawClusterName(true, true, g), clusterRun(produceRawDuplex(true))},
			{"bare", rawClusterName(false, true, g), produceRawDuplex(true)},
		}, clusterPunctualVariants()...)
	},
	report: reportCluster,
}

// clusterRun runs run with its system under test on the Cluster, after
// emptying the Cluster and resetting its statistics (the single server is
// reset by runOne as before every run).
func clusterRun(run runFunc) runFunc {
	return func(ctx context.Context, e *env) (metrics, error) {
		if e.cluster == nil {
			return nil, errors.New("no -cluster addresses")
		}
		if err := e.cluster.reset(ctx); err != nil {
			return nil, err
		}
		ce := *e
		ce.onCluster = true
		return run(ctx, &ce)
	}
}

// clusterPairs are the Cluster variants, each with its single-node twin and
// its target (0: none).
var clusterPairs = []struct {
	what, cluster, single string
	target                float64
}{
	{"Send", vClSendCluster, vClSendSingle, 0.80},
	{"SendBatch", vClBatchCluster, vClBatchSingle, 0.60},
	{"consume", vClConsumeCluster, vClConsumeSingle, 0},
	{"Send (against pipelines)", vClSendCluster, vClSendPipe, 0},
	{"Send with WithReplicaAck (against Send, Cluster)", vClSendAck, vClSendCluster, 0},
	{"SendBatch with WithReplicaAck (against SendBatch, Cluster)", vClBatchAck, vClBatchCluster, 0},
}

func reportCluster(rep *report, res *scenarioResults) {
	if len(res.order) == 0 {
		return
	}
	rep.printf("## 9. Redis Cluster\n\n")
	batch := "the default batch size"
	if rep.cfg.rmqBatch > 0 {
		batch = "WithBatchSize(" + thousands(int64(rep.cfg.rmqBatch)) + ")"
	}
	rep.printf("The same RMQ code on a private Redis Cluster of 6 nodes (3 masters + 3 replicas, cluster-node-timeout 2000, "+
		"no persistence, all on this machine) and on the single server, interleaved in every round. Send: one message "+
		"per call from %d goroutines; SendBatch: %s per call from one goroutine; consume: a backlog of n drained through "+
		"the full two-phase path with %d threads and %s. Every topic is a %d-slot Priority topic; its slots spread "+
		"over the masters by their hash tags. The Cluster client is a go-redis ClusterClient (PoolSize 256 per node); "+
		"Send writes through a send stream per master there, the single server's through its one send stream unless the "+
		"row says WithSendStream(false). The WithReplicaAck rows wait for one replica (WAIT 1 500) after each write. Before "+
		"each Cluster run every master is FLUSHALLed (the replicas follow) and every node's statistics reset. Redis CPU on "+
		"the Cluster is the sum over all 6 nodes, replication included, and over the masters alone.\n\n", rep.cfg.produceGoroutines, thousands(produceBatch), rep.cfg.rmqThreads, batch, produceSlots)
	t := newTable("Variant", "msgs/s", "client CPU /100k msgs", "Redis CPU /100k msgs (all nodes)", "… masters only")
	for _, name := range res.order {
		if isClusterPunctual(name) {
			continue
		}
		masters := "—"
		if name == vClSendCluster || name == vClBatchCluster || name == vClConsumeCluster {
			masters = stat(res.values(name, mRedisMasterCPU), cpuSec)
		}
		t.add(append(append([]string{name, stat(res.values(name, mRate), num)}, cpuCells(res, name)...), masters)...)
	}
	if len(t.rows) > 0 { // none when only the punctuality rows ran
		t.write(rep.w)
	}
	rt := newTable(roundHead("Cluster as % of single node", res.rounds)...)
	for _, p := range clusterPairs {
		if !res.has(p.cluster) || !res.has(p.single) {
			continue
		}
		share := ratios(res.perRound(p.cluster, mRate), res.perRound(p.single, mRate))
		label := p.cluster + " ÷ " + p.single
		if p.target > 0 {
			label = "**" + label + "**"
		}
		rt.add(append([]string{label}, perRoundCells(share, pct)...)...)
		if p.target > 0 {
			v, goal := median(share), p.target
			rep.target("Cluster: "+p.what, "≥ "+pct(goal)+" of the single node", pct(v),
				verdict(v, func(x float64) bool { return x >= goal }))
		}
	}
	if len(rt.rows) > 0 {
		rep.printf("Per-round throughput on the Cluster as a share of the single node's:\n\n")
		rt.write(rep.w)
	}
	reportClusterYardstick(rep, res)
	reportClusterPunctuality(rep, res)
}

// reportClusterYardstick sets the raw client's best shape on the Cluster
// against its best on the single server, and Send against each.
func reportClusterYardstick(rep *report, res *scenarioResults) {
	g := rep.cfg.produceGoroutines
	onCluster := bestMedian(res, rawClusterName(true, false, g), rawClusterName(true, true, g))
	single := bestMedian(res, rawClusterName(false, false, g), rawClusterName(false, true, g))
	if onCluster == "" || single == "" {
		return
	}
	rate := func(name string) []float64 { return res.perRound(name, mRate) }
	rep.printf("The raw ZADD rows are the Cluster's in-flight yardstick: the same ZADDs with never more than %d "+
		"unanswered (as many as Send has senders), written by the leanest client there is (raw RESP, no caller to "+
		"wake per message), on the Cluster a connection per master and each member to its key's master. Each write "+
		"sends whatever replies have freed; in waves, the writer waits until all %d are answered, so each write "+
		"carries them all. The shape with the best median on each side is the yardstick (Cluster: %s; single node: "+
		"%s). What it reaches on the Cluster as a share of the single node bounds what any client with %d in "+
		"flight can reach as such a share on this machine:\n\n", g, g, onCluster, single, g)
	t := newTable(roundHead("In-flight yardstick", res.rounds)...)
	t.add(append([]string{"**raw, Cluster ÷ raw, single node**"}, perRoundCells(ratios(rate(onCluster), rate(single)), pct)...)...)
	if res.has(vClSendCluster) {
		t.add(append([]string{vClSendCluster + " ÷ raw, Cluster"}, perRoundCells(ratios(rate(vClSendCluster), rate(onCluster)), pct)...)...)
	}
	if res.has(vClSendSingle) {
		t.add(append([]string{vClSendSingle + " ÷ raw, single node"}, perRoundCells(ratios(rate(vClSendSingle), rate(single)), pct)...)...)
	}
	t.write(rep.w)
	if !res.has(vClSendSingle) {
		return
	}
	// The machine's cores carry the client and every node: what one message
	// costs the Cluster's nodes and the leanest client caps the rate of any
	// client there, however well it used the cores.
	cores := float64(runtime.NumCPU())
	redisPer := median(res.values(onCluster, mRedisCPU)) / 1e5 // CPU seconds per message, all nodes
	clientPer := median(res.values(onCluster, mClientCPU)) / 1e5
	sendSingle := median(rate(vClSendSingle))
	rep.printf("With that client the Cluster's nodes spend %.1f µs of CPU per message (median, all nodes) and the "+
		"client %.1f µs, so %.0f cores carry at most %s msgs/s on the Cluster with a client as lean as it (%s of "+
		"Send's single-node rate of %s msgs/s), and %s msgs/s with one that cost nothing (%s).\n\n",
		redisPer*1e6, clientPer*1e6, cores, num(cores/(redisPer+clientPer)), pct(cores/(redisPer+clientPer)/sendSingle),
		num(sendSingle), num(cores/redisPer), pct(cores/redisPer/sendSingle))
}

// bestMedian returns the one of names with the highest median rate ("" if
// none ran): a per-round maximum over noisy runs would favour the yardstick
// by the noise alone.
func bestMedian(res *scenarioResults, names ...string) string {
	best, bestRate := "", 0.0
	for _, name := range names {
		if m := median(res.perRound(name, mRate)); res.has(name) && m > bestRate {
			best, bestRate = name, m
		}
	}
	return best
}
