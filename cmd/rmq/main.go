// Command rmq shows RMQ at work and administers its queues.
//
// Usage:
//
//	rmq demo [-keep] [-redis ADDR[,ADDR…] [-cluster]] [-v] [-deadline D]
//	rmq topics [-redis ADDR[,ADDR…]] [-cluster] [-namespace NS]
//	rmq stats [flags] [-all] TOPIC
//	rmq dead [flags] [-limit N] TOPIC
//	rmq requeue [flags] TOPIC [CONTENT…]
//	rmq purge [flags] [-yes] TOPIC
//	rmq web [flags] [-listen 127.0.0.1:8080] [-allow-write] [-token T] [-title T]
//	rmq pause [flags] TOPIC
//	rmq resume [flags] TOPIC
//	rmq limit [flags] TOPIC RATE[/BURST]
//	rmq delete [flags] [-force] [-yes] TOPIC
//	rmq workers [flags] [-zk HOST:PORT[,…] [-zk-root PATH]]
//	rmq assignment [flags] [-zk …] TOPIC
//	rmq help [SUBCOMMAND]
//
// "rmq demo" needs nothing: it starts an in-process Redis (miniredis), runs a
// short scenario with one topic of each type (merging, priorities, a fixed
// delivery time, retries and the dead set), prints what happens as it
// happens, and exits. With -redis it runs against a real Redis or Redis
// Cluster in a fresh namespace, whose topics it deletes at the end.
//
// The other subcommands inspect and repair the topics of one namespace of a
// real Redis (default 127.0.0.1:6379, namespace "rmq"). Several -redis
// addresses, or -cluster, mean a Redis Cluster.
//
// "stats" also shows the oldest due age and the lateness percentiles (p50,
// p90, p99) of the last five minutes and of all time, summed over every
// process of the namespace. "requeue" and "purge" show their progress on a
// line rewritten in place when stderr is a terminal, and print a summary.
//
// "web" serves the dashboard of package rmqweb: the topics, each topic's
// slots, next messages due and dead messages, and the workers. It binds
// 127.0.0.1:8080 unless -listen says otherwise and is read-only unless
// -allow-write; -token (or $RMQ_WEB_TOKEN) requires a bearer token, and
// -allow-write on a non-loopback address is refused without one.
//
// "workers" and "assignment" read the coordinator's state: the processes
// consuming the namespace (with the coordinator each runs, its threads,
// owned slots and heartbeat, and which one leads), and for each slot the
// thread it is assigned to and the worker that holds it now; from Redis for
// the Redis coordinator, or from ZooKeeper with -zk.
//
// Errors print "rmq: …" on stderr and exit 1; bad usage exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rmq-go/rmq/internal/redislog"
)

// main runs rmq with the process's arguments; Ctrl-C cancels the context.
// go-redis's line for each failed dial is left out: the subcommands report
// an unreachable Redis themselves.
func main() {
	redislog.Install()
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext returns a context that SIGINT or SIGTERM ends. The first
// signal ends the command gracefully (rmq web's shutdown, the demo's Close);
// a second one ends the process at once, killed by that signal. The second
// is caught as well: a process started with the signal ignored (nohup, a
// script's "rmq … &") would find it ignored again once no longer notified,
// so it exits with 128 + the signal's number where the signal's restored
// disposition does not end it.
func signalContext() (context.Context, context.CancelFunc) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			signal.Stop(signals)
			return
		}
		cancel()
		endOnSecond(<-signals)
	}()
	return ctx, cancel
}

// endOnSecond ends the process on a second signal sig: by sig itself with its
// disposition restored, or, where that is to ignore it, by an exit.
func endOnSecond(sig os.Signal) {
	code := exitError
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
		signal.Reset(s)
		_ = syscall.Kill(os.Getpid(), s)
		time.Sleep(200 * time.Millisecond) // a default disposition ends the process before this
	}
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is what a subcommand talks to: its output, its error stream, and its
// input (for confirmations).
type env struct {
	out    *printer
	stderr io.Writer
	stdin  io.Reader
}

// command is one subcommand of rmq.
type command struct {
	name     string
	synopsis string // the arguments after the flags, e.g. "TOPIC [CONTENT…]"
	summary  string // one line for "rmq help"
	// setup defines the subcommand's flags on fs and returns the function
	// that runs it.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a subcommand with the positional arguments left after its
// flags.
type runFunc func(ctx context.Context, e *env, args []string) error

// commands is the dispatch table, in the order "rmq help" lists them.
var commands = []command{
	{name: "demo", summary: "run a self-contained demo scenario (in-process Redis unless -redis)", setup: setupDemo},
	{name: "topics", summary: "list the topics of a namespace", setup: setupTopics},
	{name: "stats", synopsis: "TOPIC", summary: "show message counts per slot, oldest due age and lateness of a topic", setup: setupStats},
	{name: "dead", synopsis: "TOPIC", summary: "list the dead messages of a topic", setup: setupDead},
	{name: "requeue", synopsis: "TOPIC [CONTENT…]", summary: "move dead messages back to pending with fresh retries", setup: setupRequeue},
	{name: "purge", synopsis: "TOPIC", summary: "delete the dead messages of a topic", setup: setupPurge},
	{name: "web", summary: "serve the web dashboard of a namespace (read-only unless -allow-write)", setup: setupWeb},
	{name: "pause", synopsis: "TOPIC", summary: "stop every consumer of a topic from popping (sends go on)", setup: setupPause},
	{name: "resume", synopsis: "TOPIC", summary: "undo pause", setup: setupResume},
	{name: "limit", synopsis: "TOPIC RATE[/BURST]", summary: "bound how fast a topic is consumed across every process (0: unlimited)", setup: setupLimit},
	{name: "delete", synopsis: "TOPIC", summary: "delete a topic and its keys (-force: with its messages)", setup: setupDelete},
	{name: "workers", summary: "list the processes consuming a namespace, and their coordinator", setup: setupWorkers},
	{name: "assignment", synopsis: "TOPIC", summary: "show which worker thread owns each slot of a topic", setup: setupAssignment},
}

// lookup returns the subcommand called name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usageError is bad command-line usage: rmq prints it and exits 2. err, if
// set, is the typed error behind it (e.g. rmq.ErrInvalidRateLimit).
type usageError struct {
	msg string
	err error
}

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

// Unwrap returns the typed error behind the usage error, if any.
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errUsageShown is a usage error that the flag package has already printed.
var errUsageShown = errors.New("usage shown")

// run runs rmq with args (without the program name) and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(rest, stdout, stderr)
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "rmq: unknown subcommand %q\n", name)
		printUsage(stderr)
		return exitUsage
	}
	fs := newFlagSet(cmd, stderr)
	exec := cmd.setup(fs)
	pos, err := parseArgs(fs, rest)
	if err == nil {
		err = exec(ctx, &env{out: newPrinter(stdout), stderr: stderr, stdin: stdin}, pos)
	}
	return exitCode(err, cmd, stderr)
}

// exitCode reports err on stderr and returns the exit code it calls for.
func exitCode(err error, cmd *command, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsageShown):
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "rmq %s: %s\n", cmd.name, ue.msg)
		fmt.Fprintf(stderr, "usage: %s\nRun 'rmq help %s' for details.\n", cmd.usageLine(), cmd.name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "rmq: %s\n", strings.TrimPrefix(err.Error(), "rmq: "))
		return exitError
	}
}

// runHelp prints the usage of rmq, or of one subcommand.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printUsage(stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintln(stderr, "rmq help: at most one subcommand")
		return exitUsage
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "rmq help: unknown subcommand %q\n", args[0])
		return exitUsage
	}
	fs := newFlagSet(cmd, stdout)
	cmd.setup(fs)
	fs.Usage()
	return exitOK
}

// printUsage prints the overview of rmq.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "rmq shows RMQ at work and administers its queues.\n\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-36s %s\n", c.usageLine(), c.summary)
	}
	fmt.Fprintf(w, "  %-36s %s\n", "rmq help [SUBCOMMAND]", "show this overview, or a subcommand's flags")
	fmt.Fprint(w, "\nRun 'rmq SUBCOMMAND -h' for a subcommand's flags.\n")
}

// usageLine is the one-line synopsis of c.
func (c *command) usageLine() string {
	s := "rmq " + c.name + " [flags]"
	if c.synopsis != "" {
		s += " " + c.synopsis
	}
	return s
}

// newFlagSet returns the flag set of cmd, printing usage and errors to w.
func newFlagSet(cmd *command, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rmq "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: %s\n\n%s.\n\nFlags:\n", cmd.usageLine(), upperFirst(cmd.summary))
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags anywhere among args ("rmq stats TOPIC -all" works as
// well as "rmq stats -all TOPIC") and returns the positional arguments.
// Everything after "--" is positional, and so is a negative number ("rmq
// limit TOPIC -5" reaches the subcommand, which refuses the rate).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if negativeNumber(args[0]) {
			pos, args = append(pos, args[0]), args[1:]
			continue
		}
		n := flagsEnd(fs, args)
		if err := fs.Parse(args[:n]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsageShown // the flag package printed the error and usage
		}
		rest := fs.Args() // the tail of args[:n] from its first positional argument
		if k := n - len(rest); k > 0 && args[k-1] == "--" {
			return slices.Concat(pos, rest, args[n:]), nil
		}
		if len(rest) > 0 {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
		args = slices.Concat(rest, args[n:])
	}
	return pos, nil
}

// flagsEnd returns how many of args fs.Parse may see: up to the first
// negative number that is not the value of the flag before it, or "--".
func flagsEnd(fs *flag.FlagSet, args []string) int {
	for i, a := range args {
		switch {
		case a == "--":
			return len(args)
		case i > 0 && negativeNumber(a) && !takesValue(fs, args[i-1]):
			return i
		}
	}
	return len(args)
}

// takesValue reports whether arg is a flag of fs whose value is the next
// argument ("-limit", not "-limit=5" nor a boolean flag).
func takesValue(fs *flag.FlagSet, arg string) bool {
	name, ok := strings.CutPrefix(arg, "-")
	name = strings.TrimPrefix(name, "-")
	if !ok || name == "" || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// negativeNumber reports whether arg reads as a negative number ("-5",
// "-0.5/2", "-.5"), which parseArgs takes as a positional argument.
func negativeNumber(arg string) bool {
	return len(arg) > 1 && arg[0] == '-' && (arg[1] >= '0' && arg[1] <= '9' || arg[1] == '.')
}

// upperFirst returns s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
