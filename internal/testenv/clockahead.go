package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockShim moves a process's wall clock (clock_gettime's realtime clocks,
// gettimeofday, time) RMQ_CLOCK_AHEAD_SEC seconds ahead and leaves its
// monotonic clock alone, loaded with LD_PRELOAD: a server on a host whose
// clock differs from the test's.
const clockShim = `#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
static long ahead(void) {
	static long v; static int read;
	if (!read) { const char *s = getenv("RMQ_CLOCK_AHEAD_SEC"); v = s ? atol(s) : 0; read = 1; }
	return v;
}
int clock_gettime(clockid_t c, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, c, ts);
	if (r == 0 && (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE)) ts->tv_sec += ahead();
	return (int)r;
}
int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	long r = syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	if (r) return (int)r;
	if (tv) { tv->tv_sec = ts.tv_sec + ahead(); tv->tv_usec = ts.tv_nsec / 1000; }
	return 0;
}
time_t time(time_t *t) {
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	time_t v = ts.tv_sec + ahead();
	if (t) *t = v;
	return v;
}
`

// StartRedisClockAhead starts a private redis-server (as StartRedis) whose
// wall clock runs ahead of the test's by whole seconds (behind, when
// negative): Redis's TIME reads it, its timers and expiries run on its
// monotonic clock as usual. It needs a C compiler (cgo's, which -race needs
// anyway), to build the clock shim.
func StartRedisClockAhead(t testing.TB, ahead time.Duration, args ...string) *RedisServer {
	t.Helper()
	requireRedisServer(t)
	cc := "cc"
	if out, err := exec.Command("go", "env", "CC").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		cc = strings.Fields(string(out))[0]
	}
	requireBinary(t, cc)
	dir := t.TempDir()
	src, so := filepath.Join(dir, "clockahead.c"), filepath.Join(dir, "clockahead.so")
	if err := os.WriteFile(src, []byte(clockShim), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("build the clock shim: %v\n%s", err, out)
	}
	env := []string{"LD_PRELOAD=" + so, "RMQ_CLOCK_AHEAD_SEC=" + strconv.Itoa(int(ahead/time.Second))}
	return launchRedisEnv(t, dir, "", env, func(int) []string { return args }, freePort)
}
