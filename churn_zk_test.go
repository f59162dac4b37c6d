package rmq_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmq-go/rmq/internal/churn"
)

// --- ZooKeeper ensemble ------------------------------------------------------

// zkMode sends "srvr" to a ZooKeeper server and returns its Mode (leader,
// follower, standalone), or "" when it does not answer. Debian's version
// string breaks go-zookeeper's FLWSrvr, hence the parsing here.
func zkMode(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	out, _ := io.ReadAll(conn)
	for _, line := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode:"); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// zkNode returns the node number N of a server address (client port 12180+N).
func zkNode(t *testing.T, addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p-12180 < 1 || p-12180 > 3 {
		t.Fatalf("ZooKeeper server %s: not on a client port 12181..12183 of scripts/servers.sh", addr)
	}
	return p - 12180
}

// zkModes returns each server's mode.
func (r *churnRun) zkModes() map[string]string {
	modes := map[string]string{}
	for _, s := range r.servers {
		modes[s] = zkMode(s)
	}
	return modes
}

// zkLeader returns the address of the one leader, or "".
func (r *churnRun) zkLeader() string {
	leader := ""
	for s, m := range r.zkModes() {
		if m == "leader" {
			if leader != "" {
				return ""
			}
			leader = s
		}
	}
	return leader
}

// checkEnsemble fails unless all three servers serve, one of them leading.
func (r *churnRun) checkEnsemble() {
	modes := r.zkModes()
	leaders, followers := 0, 0
	for _, m := range modes {
		switch m {
		case "leader":
			leaders++
		case "follower":
			followers++
		}
	}
	if len(r.servers) != 3 || leaders != 1 || followers != 2 {
		r.t.Fatalf("the ZooKeeper ensemble is not whole before the test: %v", modes)
	}
}

// zkPID returns the PID recorded for node n, checking that it is that node's
// ZooKeeper process.
func zkPID(t *testing.T, dir string, n int) int {
	b, err := os.ReadFile(filepath.Join(dir, "pids", fmt.Sprintf("zk-%d.pid", n)))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("zk-%d.pid holds %q", n, b)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("ZooKeeper node %d (pid %d) is not running: %v", n, pid, err)
	}
	if cl := string(cmdline); !strings.Contains(cl, "QuorumPeerMain") || !strings.Contains(cl, fmt.Sprintf("/zk/%d/zoo.cfg", n)) {
		t.Fatalf("pid %d of zk-%d.pid is not ZooKeeper node %d: %q", pid, n, n, strings.ReplaceAll(cl, "\x00", " "))
	}
	return pid
}

// procGone reports whether pid has exited (gone, or a zombie).
func procGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// killZKLeader kills the ZooKeeper leader with SIGKILL and returns its node
// number. A cleanup restarts the node if the test ends before restartZK.
func (r *churnRun) killZKLeader(dir, script string, pause time.Duration) int {
	t := r.t
	leader := r.zkLeader()
	if leader == "" {
		t.Fatalf("no single ZooKeeper leader: %v", r.zkModes())
	}
	n := zkNode(t, leader)
	pid := zkPID(t, dir, n)
	// A call straddling the session suspension must end not owned.
	note := r.midCall(r.worker(r.live()[0]), "zk", churnSlowZK)
	r.zkDown = n
	t.Cleanup(func() {
		if down := r.zkDown; down != 0 {
			out, err := r.runRestart(dir, script, down)
			t.Logf("cleanup: restart of ZooKeeper node %d: err %v\n%s", down, err, out)
		}
	})
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill ZooKeeper leader %d (pid %d): %v", n, pid, err)
	}
	ev := &churnEvent{Event: churn.Event{Name: fmt.Sprintf("kill zk leader (node %d)", n), At: at.UnixNano()},
		live: r.live()}
	r.events = append(r.events, ev)
	t.Logf("%7.3fs  %s, pid %d", r.since(ev.At), ev.Name, pid)
	for gone := time.Now().Add(10 * time.Second); !procGone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(gone) {
			t.Fatalf("ZooKeeper node %d (pid %d) still runs 10s after SIGKILL", n, pid)
		}
	}
	// Note when the others elect a new leader.
	until := time.Unix(0, ev.At).Add(pause)
	for time.Now().Before(until) {
		if l := r.zkLeader(); l != "" && l != leader {
			ev.note = fmt.Sprintf("new zk leader node %d after %.3fs", zkNode(t, l), r.since(time.Now().UnixNano())-r.since(ev.At))
			t.Logf("%7.3fs  %s", r.since(time.Now().UnixNano()), ev.note)
			break
		}
		r.checkAlive()
		time.Sleep(50 * time.Millisecond)
	}
	if ev.note == "" {
		ev.note = "no new zk leader within the pause"
	}
	ev.note += "; " + note
	r.watch(ev, until)
	return n
}

func (r *churnRun) runRestart(dir, script string, n int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "restart-zk", dir, strconv.Itoa(n)).CombinedOutput()
	if err == nil {
		r.zkDown = 0
	}
	return out, err
}

// restartZK restarts node n and waits until the whole ensemble serves again.
func (r *churnRun) restartZK(dir, script string, n int, pause time.Duration) {
	t := r.t
	began := time.Now()
	out, err := r.runRestart(dir, script, n)
	if err != nil {
		t.Fatalf("restart ZooKeeper node %d: %v\n%s", n, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		modes, leaders, serving := r.zkModes(), 0, 0
		for _, m := range modes {
			if m == "leader" || m == "follower" {
				serving++
			}
			if m == "leader" {
				leaders++
			}
		}
		if serving == 3 && leaders == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ZooKeeper ensemble not whole 30s after restarting node %d: %v", n, modes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.event(time.Now(), fmt.Sprintf("zk node %d serves again", n), r.live(), pause, func(e *churnEvent) {
		e.note = fmt.Sprintf("restart took %.3fs", time.Since(began).Seconds())
	})
}
