package agent

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// drained waits, up to limit, until the agent has read everything sent on
// conn (the socket's queue of unread bytes, SIOCOUTQ, is empty).
//
// htslib-crypt4gh's own agent takes at most one message from each read of
// its socket and answers nothing to the client's hello: a request that
// arrives in the same read as the hello waits in its buffer until more
// comes, which never does. So the first request is sent only once the
// hello has been read.
func drained(conn net.Conn, limit time.Duration) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(limit)
	for wait := 50 * time.Microsecond; time.Now().Before(deadline); wait = min(2*wait, 10*time.Millisecond) {
		n, ierr := -1, error(nil)
		if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ierr != nil || n <= 0 {
			return
		}
		time.Sleep(wait)
	}
}
