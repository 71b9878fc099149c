//go:build unix

package main

import (
	"net"
	"os"
	"syscall"
)

// takeQueued accepts the connections waiting in l's queue without waiting
// for more, and closes l right after it found the queue empty.
func takeQueued(l *net.TCPListener) []net.Conn {
	defer l.Close()
	rc, err := l.SyscallConn()
	if err != nil {
		return nil
	}
	var conns []net.Conn
	rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := syscall.Accept(int(fd)) // the socket does not block: EAGAIN once empty
			if err == syscall.EINTR || err == syscall.ECONNABORTED {
				continue
			}
			if err != nil {
				return
			}
			f := os.NewFile(uintptr(nfd), "")
			c, err := net.FileConn(f)
			f.Close()
			if err == nil {
				conns = append(conns, c)
			}
		}
	})
	return conns
}
