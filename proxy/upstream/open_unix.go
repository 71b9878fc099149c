//go:build unix

package upstream

import "syscall"

// open reports whether the peer of an idle connection has not closed it
// (nor sent anything): a peek that does not wait.
func open(raw syscall.RawConn) bool {
	if raw == nil {
		return true
	}
	ok := true
	err := raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet: open. 0 bytes: closed; a byte: an answer
		// to no request; another error: broken.
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return ok && err == nil
}
