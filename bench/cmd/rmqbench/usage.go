package main

import (
	"context"
	"syscall"
	"time"
)

// processCPU returns the user+sys CPU time of this process so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// meter measures one timed section: wall time, this process's CPU and the
// Redis servers' CPU (the single server's, or every Cluster node's in a
// cluster run, with the masters' share apart).
type meter struct {
	e        *env
	start    time.Time
	cpu0     float64
	redis0   float64
	masters0 float64
	redisErr error
	cmds0    map[string]cmdStat // with -cmdstats: INFO commandstats at the start
}

// startMeter samples the counters at the start of a section.
func startMeter(ctx context.Context, e *env) *meter {
	m := &meter{e: e}
	if e.cmdstats {
		m.cmds0, _ = m.commandStats(ctx)
	}
	m.redis0, m.masters0, m.redisErr = m.redisCPU(ctx)
	m.cpu0 = processCPU()
	m.start = time.Now()
	return m
}

// redisCPU returns the CPU seconds of the servers of the run and of their masters.
func (m *meter) redisCPU(ctx context.Context) (all, masters float64, err error) {
	if m.e.onCluster {
		return m.e.cluster.cpu(ctx)
	}
	all, err = redisCPU(ctx, m.e.admin)
	return all, all, err
}

// commandStats returns INFO commandstats of the run's server, or summed
// over the Cluster's nodes.
func (m *meter) commandStats(ctx context.Context) (map[string]cmdStat, error) {
	if m.e.onCluster {
		return m.e.cluster.commandStats(ctx)
	}
	return commandStats(ctx, m.e.admin)
}

// stop samples the counters again and records elapsed seconds, the rate of
// msgs per second, and the CPU figures normalised per 100k messages.
func (m *meter) stop(ctx context.Context, msgs int, out metrics) error {
	elapsed := time.Since(m.start)
	cpu := processCPU() - m.cpu0
	r1, masters1, err := m.redisCPU(ctx)
	if err == nil {
		err = m.redisErr
	}
	if err != nil {
		return err
	}
	if m.cmds0 != nil {
		after, _ := m.commandStats(ctx)
		logTopCommands(statsDelta(m.cmds0, after), elapsed)
	}
	per100k := 100000 / float64(max(msgs, 1))
	out[mElapsed] = elapsed.Seconds()
	out[mRate] = float64(msgs) / elapsed.Seconds()
	out[mClientCPU] = cpu * per100k
	out[mRedisCPU] = (r1 - m.redis0) * per100k
	out[mRedisMasterCPU] = (masters1 - m.masters0) * per100k
	out[mRedisBusy] = (r1 - m.redis0) / elapsed.Seconds()
	return nil
}
