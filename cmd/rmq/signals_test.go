package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A second Ctrl-C ends the process at once, while the first one's graceful
// end is still under way (here it never ends): the process runs this test
// again as its child, which waits on signalContext and then hangs.
func TestSecondInterruptEndsTheProcess(t *testing.T) {
	if os.Getenv("RMQ_SIGNALS_CHILD") == "1" {
		ctx, stop := signalContext()
		defer stop()
		os.Stdout.WriteString("ready\n")
		<-ctx.Done()
		os.Stdout.WriteString("graceful end under way\n")
		time.Sleep(time.Minute) // a shutdown that hangs
		return
	}
	interruptTwice(t, exec.Command(os.Args[0], "-test.run=^TestSecondInterruptEndsTheProcess$"), func(ws syscall.WaitStatus) bool {
		return ws.Signaled() && ws.Signal() == syscall.SIGINT
	})
}

// The same for a process started with SIGINT ignored, as nohup and a script's
// "rmq … &" start it: once the first Ctrl-C was handled, the signal's restored
// disposition is to ignore it, and the second ends the process by an exit
// with 130 (128 + SIGINT).
func TestSecondInterruptEndsAProcessStartedWithItIgnored(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	cmd := exec.Command(sh, "-c", `trap "" INT; exec "$0" "$@"`, os.Args[0], "-test.run=^TestSecondInterruptEndsTheProcess$")
	interruptTwice(t, cmd, func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 130 })
}

// interruptTwice starts cmd as the signals child, interrupts it once it is
// ready and again once its graceful end is under way, and requires it to end
// within 5 s with a status that ended accepts.
func interruptTwice(t *testing.T, cmd *exec.Cmd, ended func(syscall.WaitStatus) bool) {
	t.Helper()
	cmd.Env = append(os.Environ(), "RMQ_SIGNALS_CHILD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(out)
	next := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the child never said %q", want)
	}
	next("ready")
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	next("graceful end under way")
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "the child ended by itself: %v", err)
		require.True(t, ended(exit.Sys().(syscall.WaitStatus)), "the child ended with %v, not by the second SIGINT", err)
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("a second Ctrl-C did not end the process")
	}
}
