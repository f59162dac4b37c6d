package alarm

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// timerFD is a non-blocking timerfd registered with the runtime's poller.
//
// It is armed and read with raw system calls: both return at once, and a
// plain one would mark the goroutine as in a system call, which wakes the
// runtime's monitor thread from its idle sleep on every message.
type timerFD struct {
	f  *os.File
	rc syscall.RawConn
}

// itimerspec is the kernel's struct itimerspec.
type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

func openTimerFD() (*timerFD, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, uintptr(clockMonotonic),
		uintptr(syscall.O_NONBLOCK|syscall.O_CLOEXEC), 0)
	if errno != 0 {
		return nil, errno
	}
	f := os.NewFile(fd, "timerfd") // non-blocking: NewFile registers it with the poller
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &timerFD{f: f, rc: rc}, nil
}

// clockMonotonic is CLOCK_MONOTONIC, the clock of Go's monotonic time.
const clockMonotonic = 1

// arm sets the timer to expire d from now (at once for d < 1ns).
func arm(fd uintptr, d time.Duration) syscall.Errno {
	spec := itimerspec{value: syscall.NsecToTimespec(max(int64(d), 1))}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	return errno
}

// sleep arms the timer for d and waits until it expires; a Wake (woken set,
// then the timer rung) ends it early. It reports false if the timerfd failed.
func (t *timerFD) sleep(d time.Duration, woken *atomic.Bool) bool {
	var armErr syscall.Errno
	if err := t.rc.Control(func(fd uintptr) { armErr = arm(fd, d) }); err != nil || armErr != 0 {
		return false
	}
	// A Wake that set woken before the timer was armed above may have rung it
	// before that, and arming reset it: look.
	if woken.Load() {
		return true
	}
	var buf [8]byte
	var readErr syscall.Errno
	// Read before waiting, even though the timer was armed just now: Read
	// clears what the poller has seen of the descriptor before it calls us,
	// so an expiry (or a ring) the poller collected since the arming would
	// be waited for in vain: the descriptor stays readable and no new edge
	// comes (TestShortSleepsAllEnd).
	err := t.rc.Read(func(fd uintptr) bool {
		for {
			_, _, readErr = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if readErr != syscall.EINTR {
				return readErr != syscall.EAGAIN // false: not expired yet, wait in the poller
			}
		}
	})
	return err == nil && readErr == 0
}

// ring makes the timer expire at once.
func (t *timerFD) ring() {
	_ = t.rc.Control(func(fd uintptr) { _ = arm(fd, 0) }) // a closed alarm has no sleeper to wake
}

func (t *timerFD) close() error {
	if err := t.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
