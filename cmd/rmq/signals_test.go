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
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondInterruptEndsTheProcess$")
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
		ws := exit.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "the child ended with %v, not by the second SIGINT", err)
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("a second Ctrl-C did not end the process")
	}
}
