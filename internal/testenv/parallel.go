package testenv

import (
	"flag"
	"runtime"
	"strconv"
)

// ParallelWaiters lets n of a package's parallel tests run at once (go
// test's -parallel), or GOMAXPROCS if more, unless the command line sets
// -parallel. For packages whose parallel tests (t.Parallel) spend their time
// waiting on timers and servers rather than computing, so that more of them
// than the machine has cores fit beside each other. Call it from TestMain,
// before m.Run.
func ParallelWaiters(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
