package agent

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The environment that the agent gives its command, and that the plug-in
// and [FromEnv] read.
const (
	SocketEnv = "CRYPT4GH_AGENT"  // the path of the agent's socket
	PKEnv     = "CRYPT4GH_PK"     // the agent's public key, base64
	SecretEnv = "CRYPT4GH_SECRET" // optional: the name of the key to use
	PIDEnv    = "CRYPT4GH_AGENT_PID"
)

// ErrUnreachable is returned when the agent's socket cannot be reached or
// the agent went away during a request.
var ErrUnreachable = errkind.New(errkind.Key, "the key agent cannot be reached")

// A Client talks to an agent over its socket. It is a [keys.Opener]: the
// packets it opens are opened by the agent, and the secret keys never
// reach the client's process. Its methods may be called from several
// goroutines; requests are sent one at a time over one connection, made
// on first use. The caller must call Close (or Zero, the same) when done.
type Client struct {
	// Name, when not empty, asks the agent for the key of that name
	// (its file's path or name, or its public key) instead of trying
	// every key it holds.
	Name string

	path  string
	agent keys.PublicKey

	mu       sync.Mutex
	conn     net.Conn
	r        *bufio.Reader // of conn
	s        *session
	buf      []byte
	features uint32 // of the agent's hello
	err      error  // sticky: the connection failed
}

var _ keys.Opener = (*Client)(nil)

// NewClient returns a client of the agent listening at path, whose public
// key is pk. It does not connect yet.
func NewClient(path string, pk keys.PublicKey) *Client {
	return &Client{path: path, agent: pk}
}

// FromEnv returns a client of the agent that CRYPT4GH_AGENT and
// CRYPT4GH_PK name (with the key name of CRYPT4GH_SECRET), or nil when
// CRYPT4GH_AGENT is not set.
func FromEnv() (*Client, error) {
	path := os.Getenv(SocketEnv)
	if path == "" {
		return nil, nil
	}
	pk, err := ParsePK(os.Getenv(PKEnv))
	if err != nil {
		return nil, err
	}
	c := NewClient(path, pk)
	c.Name = os.Getenv(SecretEnv)
	return c, nil
}

// ParsePK reads the agent's public key as CRYPT4GH_PK gives it.
func ParsePK(s string) (keys.PublicKey, error) {
	var pk keys.PublicKey
	if s == "" {
		return pk, errkind.Errorf(errkind.Key, "%s is set but %s is not: both come from crypt4gh agent", SocketEnv, PKEnv)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != keys.KeySize {
		return pk, errkind.Errorf(errkind.Key, "%s is not a base64 public key of %d bytes", PKEnv, keys.KeySize)
	}
	copy(pk[:], b)
	return pk, nil
}

// Path returns the socket's path.
func (c *Client) Path() string { return c.path }

func (c *Client) unreachable(err error) error {
	var why string
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		why = "it closed the connection (it stopped, or it serves another user)"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		why = "no agent listens there (it stopped)"
	default:
		why = err.Error()
	}
	return errkind.WithHint(fmt.Errorf("%w at %s: %s", ErrUnreachable, c.path, why),
		"start one with crypt4gh agent, or unset %s and give --sk", SocketEnv)
}

// connect makes the connection and the session, with c.mu held.
func (c *Client) connect() error {
	if c.err != nil {
		return c.err
	}
	if c.conn != nil {
		return nil
	}
	conn, err := net.Dial("unix", c.path)
	if err != nil {
		c.err = c.unreachable(err)
		return c.err
	}
	fail := func(err error) error {
		conn.Close()
		c.err = err
		return err
	}
	c.buf = make([]byte, 512)
	r := bufio.NewReaderSize(conn, 4096)
	msg, err := readFrame(r, c.buf)
	if err != nil {
		return fail(c.unreachable(err))
	}
	rest, err := parseHello(msg)
	if err != nil {
		return fail(err)
	}
	c.features = helloFeatures(rest)
	own, err := keys.Generate(nil)
	if err != nil {
		return fail(err)
	}
	defer own.Zero()
	pub := own.Public()
	if err := writeFrame(conn, clientHello(pub)); err != nil {
		return fail(c.unreachable(err))
	}
	// Before the first request: see drained. This module's agent (which
	// says so in its hello) reads every message as it comes, so no wait.
	if c.features&featureExtensions == 0 {
		drained(conn, 5*time.Second)
	}
	s, err := newSession(&own, c.agent, pub, c.agent, true)
	if err != nil {
		return fail(err)
	}
	c.conn, c.r, c.s = conn, r, s
	return nil
}

// ErrNotOwnAgent is returned for a request that only this module's agent
// answers (list, lock, sealing as a key...) made of another agent:
// htslib-crypt4gh's opens and seals packets only.
var ErrNotOwnAgent = errkind.New(errkind.Key, "the agent is not crypt4gh's own (htslib-crypt4gh's agent only opens packets)")

// roundTrip sends one request and returns the reply's plaintext, which the
// caller should clear.
func (c *Client) roundTrip(req []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.connect(); err != nil {
		return nil, err
	}
	if typ := binary.LittleEndian.Uint16(req); typ >= msgError && c.features&featureExtensions == 0 {
		// It would end the connection without a word.
		return nil, errkind.WithHint(fmt.Errorf("%w: at %s", ErrNotOwnAgent, c.path),
			"start crypt4gh agent, or give --sk")
	}
	fail := func(err error) ([]byte, error) {
		c.closeLocked()
		c.err = err
		return nil, err
	}
	if err := writeFrame(c.conn, c.s.seal(req)); err != nil {
		return fail(c.unreachable(err))
	}
	msg, err := readFrame(c.r, c.buf)
	if err != nil {
		return fail(c.unreachable(err))
	}
	pt, err := c.s.open(msg)
	clear(msg)
	if err != nil {
		return fail(err)
	}
	if binary.LittleEndian.Uint16(pt) == msgError {
		err := parseErrorReply(pt)
		clear(pt)
		return nil, err
	}
	return pt, nil
}

// OpenPacket asks the agent to open a method-0 header packet. A packet
// that none of the agent's keys opens gives [keys.ErrPacketAuth]; an agent
// that cannot be reached, is locked, refuses or whose keys expired gives
// another error (of the key class).
func (c *Client) OpenPacket(writer keys.PublicKey, nonce *[keys.NonceSize]byte, ct []byte) ([]byte, error) {
	return c.open(msgOpen, c.Name, nil, packetBytes(writer, nonce, ct))
}

// open sends a request of type typ (msgOpen, msgOpenAsWriter) for the key
// name, with the recipient (of msgOpenAsWriter) and the packet, and
// returns the payload that the agent opened.
func (c *Client) open(typ uint16, name string, recipient, pkt []byte) ([]byte, error) {
	if recipient != nil {
		pkt = append(recipient[:len(recipient):len(recipient)], pkt...)
	}
	pt, err := c.roundTrip(keyRequest(typ, name, pkt))
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	switch binary.LittleEndian.Uint16(pt) {
	case msgOpenFail:
		return nil, fmt.Errorf("%w: no key of the agent opens it", keys.ErrPacketAuth)
	case msgOpen:
		return append([]byte(nil), pt[2:]...), nil
	}
	return nil, fmt.Errorf("%w: unexpected reply to an open request", errProtocol)
}

// List returns the keys that the agent holds.
func (c *Client) List() ([]KeyInfo, error) {
	pt, err := c.roundTrip(binary.LittleEndian.AppendUint16(nil, msgList))
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint16(pt) != msgList {
		return nil, fmt.Errorf("%w: unexpected reply to a list request", errProtocol)
	}
	return parseListReply(pt)
}

// Lock makes the agent seal its keys with pass and refuse every request
// until [Client.Unlock] gives it again.
func (c *Client) Lock(pass []byte) error { return c.simple(msgLock, pass) }

// Unlock unlocks an agent that [Client.Lock] locked with pass.
func (c *Client) Unlock(pass []byte) error { return c.simple(msgUnlock, pass) }

// Stop makes the agent erase its keys, remove its socket and exit.
func (c *Client) Stop() error { return c.simple(msgStop, nil) }

func (c *Client) simple(typ uint16, body []byte) error {
	req := append(binary.LittleEndian.AppendUint16(nil, typ), body...)
	pt, err := c.roundTrip(req)
	clear(req)
	if err != nil {
		return err
	}
	defer clear(pt)
	if binary.LittleEndian.Uint16(pt) != msgOK {
		return fmt.Errorf("%w: unexpected reply", errProtocol)
	}
	return nil
}

func (c *Client) closeLocked() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.r = nil, nil
	}
	if c.s != nil {
		c.s.zero()
		c.s = nil
	}
}

// Close closes the connection and erases the session keys. A later
// request makes a new connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
	c.err = nil
	return nil
}

// Zero is Close, so that a Client can stand where a secret key is erased.
func (c *Client) Zero() { c.Close() }

// PublicKey returns the public key of the agent's key that requests of c
// use: the one c.Name names, or the first one the agent holds. A caller
// that asks for a file for its key (an htsget ticket) needs it.
func (c *Client) PublicKey() (keys.PublicKey, error) {
	infos, err := c.List()
	if err != nil {
		return keys.PublicKey{}, err
	}
	expired := false
	for _, k := range infos {
		e := entry{pub: k.PublicKey, name: k.Name}
		if !e.matches(c.Name) {
			continue
		}
		if k.Expired {
			expired = true
			continue
		}
		return k.PublicKey, nil
	}
	if expired {
		return keys.PublicKey{}, ErrExpired
	}
	return keys.PublicKey{}, fmt.Errorf("%w: none is named %q", ErrNoKey, c.Name)
}
