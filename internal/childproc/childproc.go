// Package childproc starts copies of the running test binary as worker
// processes of multi-process tests (the crash and churn tests): each runs one
// Test…Process function selected with -test.run, configured through its
// environment, and the parent signals, stops and inspects it.
package childproc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Process is a copy of the test binary started as a worker process.
type Process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser // closing it asks the child to stop
	outPath string         // its stdout and stderr
	done    chan struct{}  // closed once the process is reaped
	err     error          // what cmd.Wait returned, once done
}

// Start starts the test binary running test (a function name) with extra
// env added to this process's environment, its output going to outPath; name
// is how logs call it. A cleanup makes sure it is gone (SIGCONT, in case it
// is frozen, then SIGKILL) and reaped when t ends, and shows the tail of its
// output if t failed.
func Start(t testing.TB, name, test, outPath string, env ...string) *Process {
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
	cmd.SysProcAttr = DieWithParent()
	p := &Process{cmd: cmd, outPath: outPath, done: make(chan struct{})}
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
		if !p.Exited() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.done
		}
		_ = p.stdin.Close()
		if t.Failed() {
			out := p.Output()
			if lines := strings.Split(out, "\n"); len(lines) > 300 {
				out = fmt.Sprintf("(%d lines before)\n", len(lines)-300) + strings.Join(lines[len(lines)-300:], "\n")
			}
			t.Logf("%s (pid %d, %s) output:\n%s", name, cmd.Process.Pid, p.ExitStatus(), out)
		}
	})
	return p
}

// PID returns the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// CloseStdin closes the process's stdin, which asks it to stop.
func (p *Process) CloseStdin() error { return p.stdin.Close() }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited and been reaped.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns how the process ended (what exec.Cmd.Wait returned: nil for
// exit 0); nil while it runs.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// ExitStatus describes how the process ended, or "running".
func (p *Process) ExitStatus() string {
	if !p.Exited() {
		return "running"
	}
	if p.err == nil {
		return "exit 0"
	}
	return p.err.Error()
}

// Output returns what the process printed.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.outPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

// KilledBySIGKILL reports whether the reaped process ended by SIGKILL.
func (p *Process) KilledBySIGKILL() bool {
	if !p.Exited() {
		return false
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// OutputProblems lists the signs of trouble in the output: a race report, a
// panic, an error logged by the library, a failed test.
func (p *Process) OutputProblems() []string {
	out := p.Output()
	var found []string
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR", "--- FAIL"} {
		if strings.Contains(out, bad) {
			found = append(found, bad)
		}
	}
	return found
}
