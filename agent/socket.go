package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// A Socket is the agent's listening socket, alone in a folder of its own
// ([Listen]) or at a path that the user chose ([ListenAt]).
type Socket struct {
	Dir  string // the folder made for it, mode 0700; empty at a path of the user's
	Path string // the socket, mode 0600
	l    *net.UnixListener
	fi   os.FileInfo // the socket file as made, to remove only that one
}

// Listen makes a private folder (mode 0700) in $XDG_RUNTIME_DIR, or in the
// system's temporary folder when that is not set or not usable, and a
// socket (mode 0600) in it. The caller must call Remove.
func Listen() (*Socket, error) {
	var dir string
	var err error
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		dir, err = os.MkdirTemp(rt, "crypt4gh-agent.")
	}
	if dir == "" {
		dir, err = os.MkdirTemp("", "crypt4gh-agent.")
	}
	if err != nil {
		return nil, fmt.Errorf("failed to make the agent's folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.Remove(dir)
		return nil, err
	}
	path := filepath.Join(dir, "socket")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("failed to make the agent's socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		os.Remove(dir)
		return nil, err
	}
	return newSocket(dir, path, l), nil
}

func newSocket(dir, path string, l *net.UnixListener) *Socket {
	fi, _ := os.Lstat(path)
	return &Socket{Dir: dir, Path: path, l: l, fi: fi}
}

// ErrLive is returned by [ListenAt] when an agent listens at the path
// already.
var ErrLive = errkind.New(errkind.Usage, "an agent listens there already")

// ListenAt makes the agent's socket (mode 0600) at path, as ssh-agent -a
// does, so that a shell's profile can name a path of its own. Its folder
// is made (mode 0700) when missing, and must belong to this user and be
// writable by nobody else. A socket left there by an agent that was
// killed (nobody listens on it) is replaced; one that an agent still
// listens on is not: ListenAt fails with [ErrLive]. Two agents started at
// once on one path take turns (a lock on the folder), so that one of them
// gets it and the other one finds it live. The caller must call Remove,
// which removes the socket, not the folder.
func ListenAt(path string) (*Socket, error) {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to make the agent's folder: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !ownedPrivately(fi) {
		return nil, errkind.Errorf(errkind.Usage, "the folder %s of the agent's socket is not this user's alone: another user could replace the socket", dir)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to lock the agent's folder: %w", err)
	}
	defer unlock()
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, errkind.Errorf(errkind.Usage, "%s exists and is not a socket", path)
		}
		if live(path) {
			return nil, fmt.Errorf("%w: %s", ErrLive, path)
		}
		// Left by an agent that was killed: nobody answers on it.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("failed to remove the stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("failed to make the agent's socket: %w", err)
	}
	// Until then, another user who could reach it was refused anyway
	// (peer credentials).
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return newSocket("", path, l), nil
}

// live reports whether a process listens on the socket at path. A
// connection refused means nobody does; a connection made, or a listener
// whose queue is full (it is alive, only busy), means someone does.
func live(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT)
	}
	c.Close()
	return true
}

// Listener returns the listening socket.
func (s *Socket) Listener() *net.UnixListener { return s.l }

// File returns a duplicate of the listening socket's descriptor, to hand
// to another process; the caller must close it.
func (s *Socket) File() (*os.File, error) { return s.l.File() }

// FromFile is the socket of an agent whose parent handed over the
// listening descriptor f, at path, in a folder made for it when ownDir.
// It closes f.
func FromFile(f *os.File, path string, ownDir bool) (*Socket, error) {
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	ul, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, errors.New("the descriptor handed over is not a Unix socket")
	}
	dir := ""
	if ownDir {
		dir = filepath.Dir(path)
	}
	return newSocket(dir, path, ul), nil
}

// Remove closes the socket and removes it, and its folder when it was
// made for it. A socket that another agent has put at the path since is
// left alone.
func (s *Socket) Remove() {
	s.l.SetUnlinkOnClose(false)
	s.l.Close()
	if fi, err := os.Lstat(s.Path); err == nil && (s.fi == nil || os.SameFile(fi, s.fi)) {
		os.Remove(s.Path)
	}
	if s.Dir != "" {
		os.Remove(s.Dir)
	}
}

// Export writes the agent's keys to w for a process that takes over
// ([Import]): the agent's own key, then for each key its secret key, the
// end of its lifetime (a time, not a duration: the process that takes over
// ends it when this one would, however long it takes to start) and its
// name. w should be a pipe to that process:
// the keys are in clear. The agent is not changed.
func (a *Agent) Export(w io.Writer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isLocked {
		return ErrLocked
	}
	b := make([]byte, 0, 4096)
	defer func() { clear(b) }()
	b = binary.LittleEndian.AppendUint16(b, uint16(len(a.entries)))
	b = append(b, a.id[:]...)
	now := time.Now()
	for _, e := range a.entries {
		var end int64 // 0: forever
		switch {
		case !e.live(now):
			end = -1
		case !e.expires.IsZero():
			end = e.expires.UnixNano()
		}
		b = append(b, e.sk[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(end))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.name)))
		b = append(b, e.name...)
	}
	_, err := w.Write(b)
	return err
}

// Import returns an agent with the keys that [Agent.Export] wrote to r.
func Import(r io.Reader) (*Agent, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	defer clear(data)
	bad := errors.New("malformed agent state")
	if len(data) < 2+keys.KeySize {
		return nil, bad
	}
	n := int(binary.LittleEndian.Uint16(data))
	if n > MaxKeys {
		return nil, bad
	}
	a, err := New()
	if err != nil {
		return nil, err
	}
	copy(a.id[:], data[2:])
	a.idPub = a.id.Public()
	b := data[2+keys.KeySize:]
	for range n {
		if len(b) < keys.KeySize+10 {
			a.Close()
			return nil, bad
		}
		var sk keys.SecretKey
		copy(sk[:], b)
		end := int64(binary.LittleEndian.Uint64(b[keys.KeySize:]))
		left := int64(0) // forever
		if end != 0 {
			left = int64(time.Until(time.Unix(0, end)))
			if end < 0 || left <= 0 {
				left = -1 // over, or over by now
			}
		}
		l := int(binary.LittleEndian.Uint16(b[keys.KeySize+8:]))
		b = b[keys.KeySize+10:]
		if l > len(b) {
			sk.Zero()
			a.Close()
			return nil, bad
		}
		name := string(b[:l])
		b = b[l:]
		if left < 0 {
			sk.Zero()
		}
		err := a.Add(&sk, name, time.Duration(max(left, 0)))
		sk.Zero()
		if err != nil {
			a.Close()
			return nil, err
		}
		if left < 0 {
			a.mu.Lock()
			a.entries[len(a.entries)-1].expire()
			a.mu.Unlock()
		}
	}
	if len(b) != 0 {
		a.Close()
		return nil, bad
	}
	return a, nil
}
