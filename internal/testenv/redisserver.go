package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/childproc"
)

// RedisServer is a private redis-server a test starts, kills and restarts
// (on the same port and data directory).
type RedisServer struct {
	port int
	dir  string
	conf string // a config file given first on the command line; "" for none
	args []string
	env  []string // added to the process's environment
	cmd  *exec.Cmd
	done chan struct{}
}

// errExited says that a redis-server exited before it answered, most often
// because another process took its port (or its cluster bus port) first.
var errExited = errors.New("redis-server exited before it answered")

// StartRedis starts a redis-server of the test's own on a free loopback
// port in a temporary directory, with args added to its command line, and
// stops it when t ends. A missing redis-server skips or fails t (see Missing).
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	requireRedisServer(t)
	return launchRedis(t, t.TempDir(), "", func(int) []string { return args }, freePort)
}

// requireRedisServer skips t with -short, and skips it when redis-server is
// not installed, or fails it where servers are required (see Required).
func requireRedisServer(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no private redis-server")
	}
	requireBinary(t, "redis-server")
}

// requireBinary skips t when the program name is not in PATH, or fails it
// where servers are required.
func requireBinary(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if Required() {
		t.Fatalf("%s not found in PATH, and servers are required (CI=true or RMQ_REQUIRE_SERVERS=1): run scripts/test.sh", name)
	}
	t.Skipf("%s not found in PATH: run scripts/test.sh for real servers", name)
}

// launchRedis starts a redis-server in dir on a port from pick, with the
// config file conf first on its command line (unless "") and argsFor(port)
// added to it, and stops it when t ends.
// A server that exits before it answers (its port was taken meanwhile) is
// started again on a new port, up to five times.
func launchRedis(t testing.TB, dir, conf string, argsFor func(port int) []string, pick func() (int, error)) *RedisServer {
	t.Helper()
	return launchRedisEnv(t, dir, conf, nil, argsFor, pick)
}

// launchRedisEnv is launchRedis with env added to the server's environment.
func launchRedisEnv(t testing.TB, dir, conf string, env []string, argsFor func(port int) []string,
	pick func() (int, error)) *RedisServer {
	t.Helper()
	var last error
	for range 5 {
		port, err := pick()
		if err != nil {
			t.Fatalf("pick a port: %v", err)
		}
		s := &RedisServer{port: port, dir: dir, conf: conf, args: argsFor(port), env: env}
		if conf != "" {
			if err := rewritePort(conf, port); err != nil {
				t.Fatal(err)
			}
		}
		last = s.launch()
		if last == nil {
			t.Cleanup(s.stop)
			return s
		}
		s.stop()
		if !errors.Is(last, errExited) {
			break
		}
	}
	t.Fatalf("start redis-server in %s: %v", dir, last)
	return nil
}

// rewritePort sets the "port" line of a config file to port.
func rewritePort(conf string, port int) error {
	b, err := os.ReadFile(conf)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "port ") {
			lines[i] = "port " + strconv.Itoa(port)
		}
	}
	return os.WriteFile(conf, []byte(strings.Join(lines, "\n")), 0o644)
}

// Addr returns the server's address.
func (s *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the server's port.
func (s *RedisServer) Port() int { return s.port }

// PID returns the process id of the server's current process.
func (s *RedisServer) PID() int { return s.cmd.Process.Pid }

// Dir returns the server's working directory (its data and log files).
func (s *RedisServer) Dir() string { return s.dir }

func (s *RedisServer) start(t testing.TB) {
	t.Helper()
	if err := s.launch(); err != nil {
		t.Fatalf("redis-server on %s: %v", s.Addr(), err)
	}
}

// launch starts the process and waits until it answers as itself: an INFO
// reply with its own process id, so that a server of someone else on the
// same port is never taken for it.
func (s *RedisServer) launch() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--daemonize", "no")
	args = append(args, s.args...)
	log, err := os.OpenFile(filepath.Join(s.dir, "redis-"+strconv.Itoa(s.port)+".log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command("redis-server", args...)
	s.cmd.Dir = s.dir
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.cmd.SysProcAttr = childproc.DieWithParent() // a test binary that dies (a timeout's panic) leaves no server behind
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	s.done = done
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(done) }(s.cmd)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid) + "\r"
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return fmt.Errorf("%w (port %d; log in %s)", errExited, s.port, s.dir)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil && strings.Contains(info, want) {
			return nil
		}
		if err == nil {
			err = errors.New("another process answers on its port")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("does not answer: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL and waits until it is gone.
func (s *RedisServer) Kill(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill redis-server: %v", err)
	}
	<-s.done
}

// Alive reports whether the server's process has not exited.
func (s *RedisServer) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Restart starts the server again, on the same port and data directory,
// with args added to its command line this time.
func (s *RedisServer) Restart(t testing.TB, args ...string) {
	t.Helper()
	base := s.args
	s.args = append(append([]string(nil), base...), args...)
	defer func() { s.args = base }()
	s.start(t)
}

// stop ends the server (SIGCONT first, in case a test froze it, then SIGTERM,
// then SIGKILL after 5 s) and waits until it is gone.
func (s *RedisServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil || !s.Alive() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
