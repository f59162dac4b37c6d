package rmq_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// childProcess is a copy of this test binary started as a worker of a
// multi-process test (the crash and churn tests): it runs one Test…Process
// function selected with -test.run, configured through its environment.
type childProcess struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser // closing it asks the child to stop
	outPath string         // its stdout and stderr
	done    chan struct{}  // closed once the process is reaped
	err     error          // what cmd.Wait returned, once done
}

// startChild starts this test binary running test (a function name) with
// extra env, its output going to outPath. A cleanup makes sure it is gone
// (SIGCONT, in case it is frozen, then SIGKILL) and reaped when t ends, and
// shows the tail of its output if t failed.
func startChild(t *testing.T, name, test, outPath string, env ...string) *childProcess {
	t.Helper()
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Should this process die without its cleanups, the child goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &childProcess{cmd: cmd, outPath: outPath, done: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.done
		}
		_ = p.stdin.Close()
		if t.Failed() {
			out := p.output()
			if lines := strings.Split(out, "\n"); len(lines) > 300 {
				out = fmt.Sprintf("(%d lines before)\n", len(lines)-300) + strings.Join(lines[len(lines)-300:], "\n")
			}
			t.Logf("%s (pid %d, %s) output:\n%s", name, cmd.Process.Pid, p.exitStatus(), out)
		}
	})
	return p
}

func (p *childProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitStatus describes how the process ended, or "running".
func (p *childProcess) exitStatus() string {
	if !p.exited() {
		return "running"
	}
	if p.err == nil {
		return "exit 0"
	}
	return p.err.Error()
}

// output returns what the process printed.
func (p *childProcess) output() string {
	b, err := os.ReadFile(p.outPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

// killedBySIGKILL reports whether the reaped process ended by SIGKILL.
func (p *childProcess) killedBySIGKILL() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// outputProblems lists the signs of trouble in the output: a race report, a
// panic, an error logged by the library, a failed test.
func (p *childProcess) outputProblems() []string {
	out := p.output()
	var found []string
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR", "--- FAIL"} {
		if strings.Contains(out, bad) {
			found = append(found, bad)
		}
	}
	return found
}
