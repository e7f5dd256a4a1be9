//go:build !linux

package agent

import (
	"errors"
	"net"
)

// Peer is the process at the other end of a connection.
type Peer struct {
	PID int
	UID int
}

// peerOf fails: without SO_PEERCRED the agent cannot tell who connects,
// so it serves no one.
func peerOf(*net.UnixConn) (Peer, error) {
	return Peer{}, errors.New("this platform cannot tell who connects to a socket: the agent serves only Linux")
}
