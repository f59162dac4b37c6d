package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The redis-server itself is started and stopped by scripts/bench.sh; this
// file only reads its statistics through INFO and resets it between runs.

// newRedis returns a fresh go-redis client on addr. Every system in a run gets
// its own client with the same options, closed when the run ends.
func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		PoolSize:     256, // enough for 64 consumer threads plus producers: no run waits for a connection
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	})
}

// info returns the fields of INFO section as a map.
func info(ctx context.Context, r *redis.Client, section string) (map[string]string, error) {
	s, err := r.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	out := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// redisCPU returns used_cpu_user + used_cpu_sys of the server, in seconds.
func redisCPU(ctx context.Context, r *redis.Client) (float64, error) {
	m, err := info(ctx, r, "cpu")
	if err != nil {
		return 0, err
	}
	u, err1 := strconv.ParseFloat(m["used_cpu_user"], 64)
	s, err2 := strconv.ParseFloat(m["used_cpu_sys"], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("INFO cpu: bad used_cpu_user/used_cpu_sys %q/%q", m["used_cpu_user"], m["used_cpu_sys"])
	}
	return u + s, nil
}

// usedMemory returns used_memory in bytes.
func usedMemory(ctx context.Context, r *redis.Client) (int64, error) {
	m, err := info(ctx, r, "memory")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(m["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory: bad used_memory %q", m["used_memory"])
	}
	return v, nil
}

// cmdStat is one line of INFO commandstats.
type cmdStat struct {
	Calls int64
	Usec  int64
}

// commandStats returns INFO commandstats by command name ("evalsha", "zadd",
// ...). Since Redis 7 commands a Lua script runs are counted under their own
// names as well as the script's EVALSHA.
func commandStats(ctx context.Context, r *redis.Client) (map[string]cmdStat, error) {
	m, err := info(ctx, r, "commandstats")
	if err != nil {
		return nil, err
	}
	out := make(map[string]cmdStat, len(m))
	for k, v := range m {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		var st cmdStat
		for field := range strings.SplitSeq(v, ",") {
			f, val, _ := strings.Cut(field, "=")
			switch f {
			case "calls":
				st.Calls, _ = strconv.ParseInt(val, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseInt(val, 10, 64)
			}
		}
		out[name] = st
	}
	return out, nil
}

// statsDelta returns after − before per command, dropping commands with no new calls.
func statsDelta(before, after map[string]cmdStat) map[string]cmdStat {
	out := make(map[string]cmdStat)
	for k, a := range after {
		b := before[k]
		if d := (cmdStat{Calls: a.Calls - b.Calls, Usec: a.Usec - b.Usec}); d.Calls > 0 {
			out[k] = d
		}
	}
	return out
}

// resetRedis empties every database, hands the freed memory back to the
// system (after a deep backlog the allocator keeps hundreds of MB, and a run
// on that heap was measured 35 % slower than on a fresh server), and resets
// the server's command statistics, so each run starts clean.
func resetRedis(ctx context.Context, r *redis.Client) error {
	if err := r.FlushAll(ctx).Err(); err != nil { // FLUSHALL is synchronous unless lazyfree-lazy-user-flush
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	if err := r.Do(ctx, "MEMORY", "PURGE").Err(); err != nil {
		return fmt.Errorf("MEMORY PURGE: %w", err)
	}
	if err := r.ConfigResetStat(ctx).Err(); err != nil {
		return fmt.Errorf("CONFIG RESETSTAT: %w", err)
	}
	return nil
}

// redisVersion returns redis_version and the persistence settings in use.
func redisVersion(ctx context.Context, r *redis.Client) (version, persistence string, err error) {
	m, err := info(ctx, r, "server")
	if err != nil {
		return "", "", err
	}
	p, err := info(ctx, r, "persistence")
	if err != nil {
		return "", "", err
	}
	persistence = "no persistence (save \"\", appendonly no)"
	if p["aof_enabled"] == "1" {
		fsync, _ := r.ConfigGet(ctx, "appendfsync").Result()
		persistence = "appendonly yes, appendfsync " + fsync["appendfsync"]
	}
	return m["redis_version"], persistence, nil
}

// logTopCommands prints the commands that took most Redis time in a run.
func logTopCommands(d map[string]cmdStat, elapsed time.Duration) {
	type kv struct {
		name string
		cmdStat
	}
	var all []kv
	for k, v := range d {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return int(b.Usec - a.Usec) })
	var b strings.Builder
	for i, c := range all {
		if i == 16 {
			break
		}
		fmt.Fprintf(&b, " %s=%d calls/%.0fms", c.name, c.Calls, float64(c.Usec)/1000)
	}
	log.Printf("    commandstats of the timed %s:%s", elapsed.Round(time.Millisecond), b.String())
}
