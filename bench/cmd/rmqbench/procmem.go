package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// processRSS returns this process's resident set size (VmRSS of
// /proc/self/status) in bytes, or 0 where it cannot be read.
func processRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// heapInUse returns the Go heap in use (runtime.MemStats.HeapInuse) in bytes,
// after a collection, so it counts what is live rather than garbage.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// mib formats bytes as MiB.
func mib(v float64) string { return num(v/(1<<20)) + " MiB" }
