package churn_test

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
	"github.com/rmq-go/rmq/internal/testenv"
)

// The ZooKeeper coordinator's own event: its ensemble loses the leader.

// churnSlowZK is the mid-call message's time in the listener before the
// ZooKeeper leader dies. It is shorter than churnSlowSleep: the call only has
// to straddle the sessions' suspension (within milliseconds of the kill), and
// its thread's other slots wait for it, which would show in the measured pause.
const churnSlowZK = 300 * time.Millisecond

// testChurnZKLeader kills the ZooKeeper leader mid-run, restarts it, then
// kills a worker.
func testChurnZKLeader(t *testing.T) {
	e := newZKEnsemble(t)
	r := newChurnRun(t, zookeeperKind, singleRedis)
	e.check()
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4", "w5", "w6")
	n := r.killZKLeader(e, 12*time.Second)
	r.restartZK(e, n, 6*time.Second)
	r.kill("w3", churnSession+5*time.Second)
	r.finish()
}

// zkEnsemble is the 3-node ZooKeeper ensemble of scripts/servers.sh.
type zkEnsemble struct {
	t       *testing.T
	servers []string
	dir     string // RMQ_SERVERS_DIR
	script  string // RMQ_SERVERS_SCRIPT
	// portBase + N is the client port of node N: 12180 plus the port offset
	// the servers were started with.
	portBase int
	down     int // a node this run killed and has not restarted yet
}

func newZKEnsemble(t *testing.T) *zkEnsemble {
	dir, script := os.Getenv("RMQ_SERVERS_DIR"), os.Getenv("RMQ_SERVERS_SCRIPT")
	if dir == "" {
		testenv.Missing(t, "RMQ_SERVERS_DIR")
	}
	if script == "" {
		testenv.Missing(t, "RMQ_SERVERS_SCRIPT")
	}
	e := &zkEnsemble{t: t, servers: testenv.ZooKeeper(t), dir: dir, script: script, portBase: 12180}
	if b, err := os.ReadFile(filepath.Join(dir, "port-offset")); err == nil {
		offset, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s/port-offset holds %q", dir, b)
		}
		e.portBase += offset
	}
	return e
}

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

// node returns the node number N of a server address (client port portBase+N).
func (e *zkEnsemble) node(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if n := p - e.portBase; err != nil || n < 1 || n > 3 {
		e.t.Fatalf("ZooKeeper server %s: not on a client port %d..%d of scripts/servers.sh", addr, e.portBase+1, e.portBase+3)
	}
	return p - e.portBase
}

// modes returns each server's mode.
func (e *zkEnsemble) modes() map[string]string {
	modes := map[string]string{}
	for _, s := range e.servers {
		modes[s] = zkMode(s)
	}
	return modes
}

// leader returns the address of the one leader, or "".
func (e *zkEnsemble) leader() string {
	leader := ""
	for s, m := range e.modes() {
		if m == "leader" {
			if leader != "" {
				return ""
			}
			leader = s
		}
	}
	return leader
}

// check fails unless all three servers serve, one of them leading.
func (e *zkEnsemble) check() {
	modes := e.modes()
	leaders, followers := 0, 0
	for _, m := range modes {
		switch m {
		case "leader":
			leaders++
		case "follower":
			followers++
		}
	}
	if len(e.servers) != 3 || leaders != 1 || followers != 2 {
		e.t.Fatalf("the ZooKeeper ensemble is not whole before the test: %v", modes)
	}
}

// pid returns the PID recorded for node n, checking that it is that node's
// ZooKeeper process.
func (e *zkEnsemble) pid(n int) int {
	t := e.t
	b, err := os.ReadFile(filepath.Join(e.dir, "pids", fmt.Sprintf("zk-%d.pid", n)))
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
func (r *churnRun) killZKLeader(e *zkEnsemble, pause time.Duration) int {
	t := r.t
	leader := e.leader()
	if leader == "" {
		t.Fatalf("no single ZooKeeper leader: %v", e.modes())
	}
	n := e.node(leader)
	pid := e.pid(n)
	// A call straddling the session suspension must end not owned.
	note := r.midCall(r.worker(r.live()[0]), "zk", churnSlowZK)
	e.down = n
	t.Cleanup(func() {
		if down := e.down; down != 0 {
			out, err := e.restart(down)
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
		if l := e.leader(); l != "" && l != leader {
			ev.note = fmt.Sprintf("new zk leader node %d after %.3fs", e.node(l), r.since(time.Now().UnixNano())-r.since(ev.At))
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

// restart starts node n again with scripts/servers.sh restart-zk.
func (e *zkEnsemble) restart(n int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.script, "restart-zk", e.dir, strconv.Itoa(n)).CombinedOutput()
	if err == nil {
		e.down = 0
	}
	return out, err
}

// restartZK restarts node n and waits until the whole ensemble serves again.
func (r *churnRun) restartZK(e *zkEnsemble, n int, pause time.Duration) {
	t := r.t
	began := time.Now()
	out, err := e.restart(n)
	if err != nil {
		t.Fatalf("restart ZooKeeper node %d: %v\n%s", n, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		modes, leaders, serving := e.modes(), 0, 0
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
