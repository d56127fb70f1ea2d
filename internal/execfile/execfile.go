// Package execfile writes a file that this process, or a process it starts,
// will execute next.
//
// On Linux, exec of a file that some process holds open for writing fails
// with ETXTBSY ("text file busy"). A Go process that writes an executable
// while another of its goroutines forks can hand the write descriptor to the
// child: O_CLOEXEC closes it only at the child's exec, and until then the
// kernel refuses to run the file (golang.org/issue/22315). Holding
// syscall.ForkLock for reading across the write keeps every fork of this
// process out of that window, which is how the syscall package documents
// the lock's use.
package execfile

import (
	"os"
	"syscall"
)

// Write writes data to path with mode 0755, so that no process forked by
// this one meanwhile holds it open for writing when it is executed.
func Write(path string, data []byte) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, 0o755)
}
