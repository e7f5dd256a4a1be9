//go:build linux

package agent

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Peer is the process at the other end of a connection, as the kernel
// tells it (SO_PEERCRED).
type Peer struct {
	PID int
	UID int
}

// peerOf reads the credentials of the process connected to c.
func peerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("failed to read the peer's credentials: %w", serr)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}
