//go:build !linux

package childproc

import "syscall"

// DieWithParent returns no attributes: only Linux can tie a child's life to
// its parent's; elsewhere the child notices the parent is gone when its stdin
// reaches EOF.
func DieWithParent() *syscall.SysProcAttr { return nil }
