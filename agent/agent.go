package agent

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"

	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// MaxKeys is the number of secret keys an agent holds at most.
const MaxKeys = 64

// Errors of the agent, as its clients receive them (the kind travels with
// the reply; the text is the agent's).
var (
	ErrExpired = errkind.New(errkind.Key, "the lifetime of the agent's keys is over")
	ErrLocked  = errkind.New(errkind.Key, "the agent is locked")
	ErrRefused = errkind.New(errkind.Key, "the agent's user refused the use of the key")
	ErrNoKey   = errkind.New(errkind.Key, "the agent holds no such key")
	errTooMany = errkind.New(errkind.Usage, "too many keys for one agent")
	errBadLock = errkind.New(errkind.Key, "wrong passphrase for the agent")
)

// An Agent holds unlocked secret keys and opens header packets with them
// for the clients of its socket, speaking the protocol of samtools'
// htslib-crypt4gh plug-in. The keys never leave it: a client sends a
// packet and receives the payload. It serves only processes of the user
// that runs it (checked with SO_PEERCRED on every connection, whatever
// the socket's mode).
//
// The keys are kept in memory outside the Go heap, locked against
// swapping where the system allows ([Agent.MemoryLocked]), and erased by
// [Agent.Close] and when their lifetime ends.
type Agent struct {
	// Confirm, when not nil, is asked before a connection's first use of a
	// secret key; the request is refused when it returns false. Calls are
	// made one at a time.
	Confirm func(Peer, KeyInfo) bool
	// Log, when not nil, receives a line for each refused connection.
	Log func(format string, args ...any)

	mu       sync.Mutex
	mem      []byte // slot 0: the agent's own key; then one slot a key
	memLock  bool
	free     func()
	id       *keys.SecretKey
	idPub    keys.PublicKey
	entries  []*entry
	isLocked bool
	box      []byte // the keys, sealed with the lock passphrase
	salt     [16]byte
	closed   bool
	conns    map[net.Conn]bool
	lns      []net.Listener

	confirmMu sync.Mutex
	stopOnce  sync.Once
	stopped   chan struct{}
}

type entry struct {
	sk      *keys.SecretKey // a slot of mem
	pub     keys.PublicKey
	name    string
	expires time.Time // zero: never
	expired bool
	timer   *time.Timer
}

// New returns an agent with a fresh key pair of its own (whose public key
// clients need, see [Agent.PublicKey]) and no secret keys. The caller must
// call Close.
func New() (*Agent, error) {
	mem, locked, free := lockedPage(4096)
	a := &Agent{mem: mem, memLock: locked, free: free, conns: map[net.Conn]bool{}, stopped: make(chan struct{})}
	a.id = a.slot(0)
	sk, err := keys.Generate(nil)
	if err != nil {
		free()
		return nil, err
	}
	*a.id = sk
	sk.Zero()
	a.idPub = a.id.Public()
	return a, nil
}

func (a *Agent) slot(i int) *keys.SecretKey {
	return (*keys.SecretKey)(a.mem[i*keys.KeySize : (i+1)*keys.KeySize])
}

// MemoryLocked reports whether the keys' memory is locked against swapping.
func (a *Agent) MemoryLocked() bool { return a.memLock }

// PublicKey returns the agent's own public key, which clients check the
// agent with (CRYPT4GH_PK).
func (a *Agent) PublicKey() keys.PublicKey { return a.idPub }

// Add copies sk into the agent's memory, under name (the name requests
// may ask for; the key file's path). With a lifetime above zero, the key
// is erased when it ends and requests for it fail with [ErrExpired]. The
// caller may erase its own copy of sk.
func (a *Agent) Add(sk *keys.SecretKey, name string, lifetime time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.entries) >= MaxKeys {
		return fmt.Errorf("%w (at most %d)", errTooMany, MaxKeys)
	}
	e := &entry{sk: a.slot(len(a.entries) + 1), pub: sk.Public(), name: name}
	*e.sk = *sk
	if lifetime > 0 {
		e.expires = time.Now().Add(lifetime)
		e.timer = time.AfterFunc(lifetime, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			e.expire()
		})
	}
	a.entries = append(a.entries, e)
	return nil
}

func (e *entry) expire() {
	e.sk.Zero()
	e.expired = true
}

// live reports whether e may be used now.
func (e *entry) live(now time.Time) bool {
	if !e.expired && !e.expires.IsZero() && !now.Before(e.expires) {
		e.expire()
	}
	return !e.expired
}

// matches reports whether a request for name asks for e: any key for an
// empty name, else the key whose name, file name or public key it is.
func (e *entry) matches(name string) bool {
	return name == "" || name == e.name || name == filepath.Base(e.name) || name == e.pub.String()
}

// Keys describes the keys that the agent holds.
func (a *Agent) Keys() []KeyInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	infos := make([]KeyInfo, 0, len(a.entries))
	for _, e := range a.entries {
		infos = append(infos, KeyInfo{PublicKey: e.pub, Name: e.name, Expired: !e.live(now)})
	}
	return infos
}

// Stopped is closed when a client asked the agent to stop
// ([Client.Stop]) or Close was called.
func (a *Agent) Stopped() <-chan struct{} { return a.stopped }

// Serve accepts connections on l and serves each in its own goroutine
// until Close is called or a client asks the agent to stop; then it
// returns nil. It closes l.
func (a *Agent) Serve(l *net.UnixListener) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		l.Close()
		return nil
	}
	a.lns = append(a.lns, l)
	a.mu.Unlock()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			select {
			case <-a.stopped:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			c.Close()
			continue
		}
		a.conns[c] = true
		a.mu.Unlock()
		go a.serveConn(c)
	}
}

// stop closes the listeners and wakes whoever waits on Stopped.
func (a *Agent) stop() {
	a.stopOnce.Do(func() {
		close(a.stopped)
		a.mu.Lock()
		for _, l := range a.lns {
			l.Close()
		}
		a.mu.Unlock()
	})
}

// Close stops serving, closes every connection and erases every key.
func (a *Agent) Close() {
	a.stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	for c := range a.conns {
		c.Close()
	}
	for _, e := range a.entries {
		if e.timer != nil {
			e.timer.Stop()
		}
		e.expire()
	}
	clear(a.box)
	a.free()
}

func (a *Agent) logf(format string, args ...any) {
	if a.Log != nil {
		a.Log(format, args...)
	}
}

// serveConn runs the protocol on one connection. A message that breaks the
// protocol ends the connection, as the plug-in's agent does.
func (a *Agent) serveConn(c *net.UnixConn) {
	defer func() {
		a.mu.Lock()
		delete(a.conns, c)
		a.mu.Unlock()
		c.Close()
	}()
	peer, err := peerOf(c)
	if err != nil {
		a.logf("refused a connection: %v", err)
		return
	}
	if peer.UID != os.Getuid() {
		a.logf("refused a connection from user %d (process %d): the agent serves only user %d", peer.UID, peer.PID, os.Getuid())
		return
	}
	if writeFrame(c, agentHello()) != nil {
		return
	}
	// One read of the socket takes a whole request (and the next ones
	// when they come together), not its length and then the rest.
	r := bufio.NewReaderSize(c, 4096)
	buf := make([]byte, 512)
	msg, err := readFrame(r, buf)
	if err != nil {
		return
	}
	rest, err := parseHello(msg)
	if err != nil || len(rest) < keys.KeySize {
		return
	}
	var client keys.PublicKey
	copy(client[:], rest)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	s, err := newSession(a.id, client, client, a.idPub, false)
	a.mu.Unlock()
	if err != nil {
		return
	}
	defer s.zero()
	st := &connState{peer: peer}
	for {
		msg, err := readFrame(r, buf)
		if err != nil {
			return
		}
		pt, err := s.open(msg)
		clear(msg)
		if err != nil {
			return
		}
		reply, err := a.handle(pt, st)
		clear(pt)
		if err != nil {
			return
		}
		out := s.seal(reply)
		clear(reply)
		if writeFrame(c, out) != nil {
			return
		}
		if st.stop {
			a.stop()
			return
		}
	}
}

// connState is what the agent remembers of a connection.
type connState struct {
	peer      Peer
	confirmed bool
	stop      bool
}

// handle answers one request. An error ends the connection.
func (a *Agent) handle(pt []byte, st *connState) ([]byte, error) {
	typ := binary.LittleEndian.Uint16(pt)
	switch typ {
	case msgOpen:
		req, err := parseKeyRequest(pt)
		if err != nil {
			return nil, err
		}
		return a.open(req, st)
	case msgSeal:
		req, err := parseKeyRequest(pt)
		if err != nil {
			return nil, err
		}
		return a.seal(req), nil
	case msgSealAs, msgOpenAsWriter, msgDerive:
		req, err := parseKeyRequest(pt)
		if err != nil {
			return nil, err
		}
		return a.asKey(req, st), nil
	case msgList:
		return listReply(a.Keys()), nil
	case msgLock:
		return okOrError(a.lock(pt[2:])), nil
	case msgUnlock:
		return okOrError(a.unlock(pt[2:])), nil
	case msgStop:
		st.stop = true
		return okOrError(nil), nil
	}
	return nil, fmt.Errorf("%w: unknown message type %d", errProtocol, typ)
}

func okOrError(err error) []byte {
	if err != nil {
		return errorReply(err)
	}
	return binary.LittleEndian.AppendUint16(nil, msgOK)
}

// open tries the keys that req names on its packet.
func (a *Agent) open(req request, st *connState) ([]byte, error) {
	writer, nonce, ct, err := parsePacketBytes(req.rest)
	if err != nil {
		// Not a packet this agent can open (the plug-in sends every
		// packet): no key opens it.
		return binary.LittleEndian.AppendUint16(nil, msgOpenFail), nil
	}
	a.mu.Lock()
	if a.isLocked {
		a.mu.Unlock()
		return errorReply(fmt.Errorf("%w: run crypt4gh agent --unlock", ErrLocked)), nil
	}
	var (
		pt            []byte
		by            *entry
		live, expired int
		now           = time.Now()
	)
	for _, e := range a.entries {
		if !e.matches(req.name) {
			continue
		}
		if !e.live(now) {
			expired++
			continue
		}
		live++
		sum, err := kx(e.sk, writer, e.pub, writer)
		if err != nil {
			continue
		}
		k := [keys.KeySize]byte(sum[:keys.KeySize])
		clear(sum[:])
		pt, err = keys.OpenPacketWith(&k, &nonce, ct)
		clear(k[:])
		if err == nil {
			by = e
			break
		}
	}
	a.mu.Unlock()
	switch {
	case by == nil && live == 0 && expired > 0:
		return errorReply(ErrExpired), nil
	case by == nil && live == 0 && req.name != "":
		return errorReply(fmt.Errorf("%w: none is named %q", ErrNoKey, printable([]byte(req.name)))), nil
	case by == nil:
		return binary.LittleEndian.AppendUint16(nil, msgOpenFail), nil
	}
	if !a.confirm(st, KeyInfo{PublicKey: by.pub, Name: by.name}) {
		clear(pt)
		return errorReply(ErrRefused), nil
	}
	reply := binary.LittleEndian.AppendUint16(make([]byte, 0, 2+len(pt)), msgOpen)
	reply = append(reply, pt...)
	clear(pt)
	return reply, nil
}

// seal seals req's payload for the public key of a key that req names,
// with a fresh writer key, and replies with the packet.
func (a *Agent) seal(req request) []byte {
	a.mu.Lock()
	var to *keys.PublicKey
	expired := 0
	now := time.Now()
	for _, e := range a.entries {
		if !e.matches(req.name) {
			continue
		}
		if !e.live(now) {
			expired++
			continue
		}
		pk := e.pub
		to = &pk
		break
	}
	locked := a.isLocked
	a.mu.Unlock()
	switch {
	case locked:
		return errorReply(ErrLocked)
	case to == nil && expired > 0:
		return errorReply(ErrExpired)
	case to == nil:
		return errorReply(ErrNoKey)
	}
	w, err := keys.Generate(nil)
	if err != nil {
		return errorReply(err)
	}
	p, err := header.SealPacket(&w, *to, req.rest, nil)
	w.Zero()
	if err != nil {
		return errorReply(err)
	}
	reply := binary.LittleEndian.AppendUint16(nil, msgSeal)
	return append(reply, packetBytes(p.WriterPublicKey, &p.Nonce, p.Ciphertext)...)
}

// asKey answers the requests that use one key as it is, not to open a
// packet for it: msgSealAs, msgOpenAsWriter and msgDerive. The key is the
// first live one that the request names; the checks (lock, lifetime,
// --confirm) are those of msgOpen.
func (a *Agent) asKey(req request, st *connState) []byte {
	if req.typ == msgDerive && !strings.HasPrefix(string(req.rest), deriveNamespace) {
		return errorReply(errkind.Errorf(errkind.Usage, "the agent derives secrets only for labels that begin %q", deriveNamespace))
	}
	a.mu.Lock()
	if a.isLocked {
		a.mu.Unlock()
		return errorReply(fmt.Errorf("%w: run crypt4gh agent --unlock", ErrLocked))
	}
	var (
		by      *entry
		expired int
		now     = time.Now()
	)
	for _, e := range a.entries {
		if !e.matches(req.name) {
			continue
		}
		if e.live(now) {
			by = e
			break
		}
		expired++
	}
	if by == nil {
		a.mu.Unlock()
		if expired > 0 {
			return errorReply(ErrExpired)
		}
		return errorReply(fmt.Errorf("%w: none is named %q", ErrNoKey, printable([]byte(req.name))))
	}
	reply := binary.LittleEndian.AppendUint16(nil, req.typ)
	var err error
	switch req.typ {
	case msgSealAs:
		var nonce [keys.NonceSize]byte
		var ct []byte
		if nonce, ct, err = by.sk.SealPacketFor(req.recipient, req.rest, nil); err == nil {
			reply = append(reply, packetBytes(by.pub, &nonce, ct)...)
		}
	case msgOpenAsWriter:
		var pt []byte
		writer, nonce, ct, perr := parsePacketBytes(req.rest)
		if perr == nil && writer == by.pub {
			pt, err = by.sk.OpenPacketAsWriter(req.recipient, &nonce, ct)
		}
		if perr != nil || writer != by.pub || errors.Is(err, keys.ErrPacketAuth) {
			reply, err = binary.LittleEndian.AppendUint16(reply[:0], msgOpenFail), nil
		} else if err == nil {
			reply = binary.LittleEndian.AppendUint16(reply[:0], msgOpen)
			reply = append(reply, pt...)
			clear(pt)
		}
	case msgDerive:
		var k []byte
		if k, err = by.sk.Derive(string(req.rest)); err == nil {
			reply = append(reply, k...)
			clear(k)
		}
	}
	info := KeyInfo{PublicKey: by.pub, Name: by.name}
	a.mu.Unlock()
	if err != nil {
		clear(reply)
		return errorReply(err)
	}
	if !a.confirm(st, info) {
		clear(reply)
		return errorReply(ErrRefused)
	}
	return reply
}

// confirm asks Confirm, when set, before a connection's first use of a
// key, and reports whether the use is allowed.
func (a *Agent) confirm(st *connState, info KeyInfo) bool {
	if a.Confirm == nil || st.confirmed {
		return true
	}
	a.confirmMu.Lock()
	ok := a.Confirm(st.peer, info)
	a.confirmMu.Unlock()
	st.confirmed = ok
	return ok
}

// lockKey derives the key that seals the keys while the agent is locked.
func lockKey(pass []byte, salt []byte) ([]byte, error) {
	return scrypt.Key(pass, salt, 1<<15, 8, 1, chacha20poly1305.KeySize)
}

// lock seals the keys with pass and erases them.
func (a *Agent) lock(pass []byte) error {
	if len(pass) == 0 {
		return errkind.New(errkind.Usage, "an empty passphrase cannot lock the agent")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isLocked {
		return errkind.New(errkind.Usage, "the agent is locked already")
	}
	if _, err := rand.Read(a.salt[:]); err != nil {
		return err
	}
	k, err := lockKey(pass, a.salt[:])
	if err != nil {
		return err
	}
	defer clear(k)
	aead, _ := chacha20poly1305.New(k)
	n := len(a.entries) + 1
	plain := a.mem[keys.KeySize : n*keys.KeySize]
	var nonce [chacha20poly1305.NonceSize]byte
	a.box = aead.Seal(nil, nonce[:], plain, a.salt[:])
	clear(plain)
	a.isLocked = true
	return nil
}

// unlock opens the sealed keys with pass.
func (a *Agent) unlock(pass []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.isLocked {
		return errkind.New(errkind.Usage, "the agent is not locked")
	}
	k, err := lockKey(pass, a.salt[:])
	if err != nil {
		return err
	}
	defer clear(k)
	aead, _ := chacha20poly1305.New(k)
	var nonce [chacha20poly1305.NonceSize]byte
	n := len(a.entries) + 1
	if _, err := aead.Open(a.mem[keys.KeySize:keys.KeySize], nonce[:], a.box, a.salt[:]); err != nil {
		clear(a.mem[keys.KeySize : n*keys.KeySize])
		return errBadLock
	}
	clear(a.box)
	a.box = nil
	a.isLocked = false
	// Keys whose lifetime ended while locked stay erased.
	for _, e := range a.entries {
		if e.expired {
			e.sk.Zero()
		}
	}
	return nil
}
