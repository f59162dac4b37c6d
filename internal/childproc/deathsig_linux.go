package childproc

import "syscall"

// DieWithParent makes the kernel SIGKILL the child when the parent dies.
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
