//go:build !linux

package alarm

import (
	"errors"
	"sync/atomic"
	"time"
)

// timerFD exists on Linux only; elsewhere the alarm uses a runtime timer.
type timerFD struct{}

func openTimerFD() (*timerFD, error) { return nil, errors.New("alarm: no timerfd on this system") }

func (*timerFD) sleep(time.Duration, *atomic.Bool) bool { return false }
func (*timerFD) ring()                                  {}
func (*timerFD) close() error                           { return nil }
