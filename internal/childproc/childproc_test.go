package childproc_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/childproc"
)

const modeEnv = "RMQ_CHILDPROC_TEST_MODE"

// TestChildProcess is the child of the tests below; it returns at once
// unless modeEnv is set.
func TestChildProcess(t *testing.T) {
	switch os.Getenv(modeEnv) {
	case "":
	case "print":
		fmt.Println("hello from the child")
		fmt.Println("time=… level=ERROR msg=oops")
	case "stdin":
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Println("stdin closed")
	case "hang":
		fmt.Println("hanging")
		select {}
	}
}

func start(t *testing.T, mode string) *childproc.Process {
	return childproc.Start(t, "child "+mode, "TestChildProcess", filepath.Join(t.TempDir(), "out"), modeEnv+"="+mode)
}

func waitDone(t *testing.T, p *childproc.Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not exit")
	}
}

func TestExitAndOutput(t *testing.T) {
	p := start(t, "print")
	waitDone(t, p)
	assert.True(t, p.Exited())
	require.NoError(t, p.Err())
	assert.Equal(t, "exit 0", p.ExitStatus())
	assert.Contains(t, p.Output(), "hello from the child")
	assert.Equal(t, []string{"level=ERROR"}, p.OutputProblems())
	assert.False(t, p.KilledBySIGKILL())
}

func TestCloseStdinStopsTheChild(t *testing.T) {
	p := start(t, "stdin")
	assert.Positive(t, p.PID())
	require.NoError(t, p.CloseStdin())
	waitDone(t, p)
	require.NoError(t, p.Err())
	assert.Contains(t, p.Output(), "stdin closed")
}

func TestKill(t *testing.T) {
	p := start(t, "hang")
	assert.Equal(t, "running", p.ExitStatus())
	assert.NoError(t, p.Err(), "no error while running")
	require.NoError(t, p.Signal(syscall.SIGKILL))
	waitDone(t, p)
	assert.True(t, p.KilledBySIGKILL())
	assert.Error(t, p.Err())
	assert.Empty(t, p.OutputProblems())
}
