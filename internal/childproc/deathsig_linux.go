package childproc

import "syscall"

// dieWithParent makes the kernel SIGKILL the child when the parent dies.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
