package agent

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// serve starts an agent holding sks on a socket in a temporary folder and
// returns it and a client.
func serve(t testing.TB, lifetime time.Duration, sks ...*keys.SecretKey) (*Agent, *Client) {
	t.Helper()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for i, sk := range sks {
		if err := a.Add(sk, filepath.Join("/keys", string(rune('a'+i))+".sec"), lifetime); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(s.Listener()) }()
	c := NewClient(s.Path, a.PublicKey())
	t.Cleanup(func() {
		c.Close()
		a.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		s.Remove()
	})
	return a, c
}

func newKey(t testing.TB) *keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}

func TestSocketModes(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{s.Dir: 0o700, s.Path: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), want, err)
		}
	}
	s.Remove()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("the folder is left after Remove: %v", err)
	}
}

// TestDecryptThroughAgent opens a header with two packets for the
// agent's second key, one for another key, through the client, and gets
// what the secret key itself gets.
func TestDecryptThroughAgent(t *testing.T) {
	other, k1, k2 := newKey(t), newKey(t), newKey(t)
	_, c := serve(t, 0, k1, k2)
	var dk [32]byte
	rand.Read(dk[:])
	h, err := header.New(nil, []keys.PublicKey{other.Public(), k2.Public()}, &dk, []uint64{5, 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := h.Decrypt(k2, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Decrypt(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.DataKeys) != 1 || got.DataKeys[0] != dk || !equalInts(got.Opened, want.Opened) || len(got.EditList) != 2 {
		t.Errorf("through the agent: %+v, with the key: %+v", got, want)
	}
	// Only for another key: no packet opens.
	h2, _ := header.New(nil, []keys.PublicKey{other.Public()}, &dk, nil, nil)
	if _, err := h2.Decrypt(c, nil); !errors.Is(err, header.ErrNoDecryptablePacket) {
		t.Errorf("a header for another key: %v", err)
	}
	// A name picks the key: the first key's name opens nothing.
	c.Name = "a.sec"
	if _, err := h.Decrypt(c, nil); !errors.Is(err, header.ErrNoDecryptablePacket) {
		t.Errorf("asking for key a: %v", err)
	}
	c.Name = "/keys/b.sec"
	if _, err := h.Decrypt(c, nil); err != nil {
		t.Errorf("asking for key b: %v", err)
	}
	c.Name = "nonesuch"
	if _, err := h.Decrypt(c, nil); !errors.Is(err, ErrNoKey) && errkind.Of(err) != errkind.Key {
		t.Errorf("asking for a key it lacks: %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListLockUnlock(t *testing.T) {
	k := newKey(t)
	_, c := serve(t, 0, k)
	infos, err := c.List()
	if err != nil || len(infos) != 1 || infos[0].PublicKey != k.Public() || infos[0].Expired || infos[0].Name != "/keys/a.sec" {
		t.Fatalf("List: %+v, %v", infos, err)
	}
	var dk [32]byte
	h, _ := header.New(nil, []keys.PublicKey{k.Public()}, &dk, nil, nil)
	if err := c.Lock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Decrypt(c, nil); !errors.Is(err, ErrLocked) && errkind.Of(err) != errkind.Key {
		t.Errorf("locked: %v", err)
	}
	if err := c.Unlock([]byte("nope")); errkind.Of(err) != errkind.Key {
		t.Errorf("wrong unlock: %v", err)
	}
	if err := c.Unlock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Decrypt(c, nil); err != nil {
		t.Errorf("unlocked: %v", err)
	}
}

func TestLifetime(t *testing.T) {
	k := newKey(t)
	var dk [32]byte
	h, _ := header.New(nil, []keys.PublicKey{k.Public()}, &dk, nil, nil)
	// The request within the lifetime must come within it, which a
	// loaded machine running the race detector may not manage in 1 s:
	// a failure after the lifetime could have ended shows nothing, and
	// the agent is started again with a lifetime four times as long.
	var c *Client
	var added time.Time // after the key was added: its lifetime ends before added+lifetime
	lifetime := time.Second
	for ; ; lifetime *= 4 {
		before := time.Now()
		_, c = serve(t, lifetime, k)
		added = time.Now()
		_, err := h.Decrypt(c, nil)
		if err == nil {
			break
		}
		if took := time.Since(before); took < lifetime || lifetime >= 16*time.Second {
			t.Fatalf("within the lifetime of %v (%v after it began): %v", lifetime, took, err)
		}
	}
	time.Sleep(time.Until(added.Add(lifetime + 100*time.Millisecond)))
	_, err := h.Decrypt(c, nil)
	if !errors.Is(err, ErrExpired) && (errkind.Of(err) != errkind.Key || !bytes.Contains([]byte(err.Error()), []byte("lifetime"))) {
		t.Errorf("expired: %v", err)
	}
	if infos, _ := c.List(); len(infos) != 1 || !infos[0].Expired {
		t.Errorf("List after expiry: %+v", infos)
	}
}

// TestAgentGone: a request to an agent that stopped fails at once, with
// the key class.
func TestAgentGone(t *testing.T) {
	k := newKey(t)
	a, c := serve(t, 0, k)
	var dk [32]byte
	h, _ := header.New(nil, []keys.PublicKey{k.Public()}, &dk, nil, nil)
	if _, err := h.Decrypt(c, nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	_, err := h.Decrypt(c, nil)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("after Close: %v", err)
	}
}

// TestExportImport hands the keys to another agent, as --daemon does.
func TestExportImport(t *testing.T) {
	k := newKey(t)
	a, _ := serve(t, time.Hour, k)
	var buf bytes.Buffer
	if err := a.Export(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := Import(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.PublicKey() != a.PublicKey() || len(b.Keys()) != 1 || b.Keys()[0].PublicKey != k.Public() {
		t.Errorf("imported: %+v", b.Keys())
	}
	if _, err := Import(bytes.NewReader([]byte{1, 0, 2})); err == nil {
		t.Error("a truncated state was imported")
	}
}

// TestProtocolViolations: a message out of sequence, a frame too long, or
// garbage ends the connection; the agent goes on serving others.
func TestProtocolViolations(t *testing.T) {
	k := newKey(t)
	a, c := serve(t, 0, k)
	conn, err := net.Dial("unix", c.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := readFrame(conn, nil); err != nil {
		t.Fatal(err)
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], maxFrame+1)
	conn.Write(n[:])
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readFrame(conn, nil); err == nil {
		t.Error("a frame over the limit was answered")
	}
	if _, err := c.List(); err != nil {
		t.Errorf("the agent stopped serving: %v", err)
	}
	_ = a
}

func FuzzHandle(f *testing.F) {
	k, _ := keys.Generate(nil)
	var dk [32]byte
	h, _ := header.New(nil, []keys.PublicKey{k.Public()}, &dk, nil, nil)
	p := h.Packets[0]
	f.Add(keyRequest(msgOpen, "", packetBytes(p.WriterPublicKey, &p.Nonce, p.Ciphertext)))
	f.Add(keyRequest(msgSeal, "", header.DataKeyPayload(&dk)))
	f.Add(binary.LittleEndian.AppendUint16(nil, msgList))
	f.Add(append(binary.LittleEndian.AppendUint16(nil, msgLock), "pw"...))
	f.Add([]byte{2, 0, 0xff, 0xff})
	a, err := New()
	if err != nil {
		f.Fatal(err)
	}
	defer a.Close()
	a.Add(&k, "k", 0)
	f.Fuzz(func(t *testing.T, pt []byte) {
		if len(pt) < 2 {
			return
		}
		if t := binary.LittleEndian.Uint16(pt); t == msgLock || t == msgUnlock || t == msgStop {
			return // slow (scrypt) or ends the agent
		}
		reply, err := a.handle(pt, &connState{})
		if err == nil && len(reply) < 2 {
			t.Fatalf("reply of %d bytes", len(reply))
		}
	})
}

func FuzzReplies(f *testing.F) {
	f.Add(listReply([]KeyInfo{{Name: "a.sec"}, {Expired: true}}))
	f.Add(errorReply(ErrExpired))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseListReply(b)
		parseErrorReply(b)
		parseKeyRequest(append([]byte{2, 0}, b...))
		parsePacketBytes(b)
		readFrame(bytes.NewReader(b), nil)
		Import(bytes.NewReader(b))
	})
}

// BenchmarkAgentOpen10k opens 10,000 header packets through an agent
// over its socket, one request each (scripts/bench.sh prints it).
func BenchmarkAgentOpen10k(b *testing.B) {
	k := newKey(b)
	_, c := serve(b, 0, k)
	var dk [32]byte
	const n = 10000
	pkts := make([]header.Packet, n)
	for i := range pkts {
		p, err := header.SealPacket(k, k.Public(), header.DataKeyPayload(&dk), nil)
		if err != nil {
			b.Fatal(err)
		}
		pkts[i] = p
	}
	b.ResetTimer()
	for range b.N {
		for i := range pkts {
			pt, err := pkts[i].Open(c)
			if err != nil {
				b.Fatal(err)
			}
			clear(pt)
		}
	}
}

// BenchmarkDecrypt1KB decrypts a 1 KB file with the secret key and
// through an agent, a new client (connection and key exchange) for each,
// as each command makes one: the difference is what the agent adds to a
// decrypt (scripts/bench.sh prints it).
func BenchmarkDecrypt1KB(b *testing.B) {
	k := newKey(b)
	_, c := serve(b, 0, k)
	var file bytes.Buffer
	w, err := c4gh.NewWriter(&file, c4gh.EncryptOptions{Recipients: []keys.PublicKey{k.Public()}})
	if err != nil {
		b.Fatal(err)
	}
	plain := make([]byte, 1000)
	w.Write(plain)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	decrypt := func(b *testing.B, key keys.Opener) {
		r, err := c4gh.NewReader(bytes.NewReader(file.Bytes()), key, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(plain)) {
			b.Fatal(n, err)
		}
		r.Close()
	}
	b.Run("sk", func(b *testing.B) {
		for range b.N {
			decrypt(b, k)
		}
	})
	b.Run("agent", func(b *testing.B) {
		for range b.N {
			nc := NewClient(c.Path(), c.agent)
			decrypt(b, nc)
			nc.Close()
		}
	})
}

// TestKeyWritesAsKey: an agent's Key seals packets with the key as their
// writer, opens the packets that key wrote and derives what the key
// derives, as the secret key itself does; labels outside this module's
// namespace are refused.
func TestKeyWritesAsKey(t *testing.T) {
	k, r := newKey(t), newKey(t)
	_, c := serve(t, 0, newKey(t), k)
	c.Name = "b.sec"
	key, err := c.Key()
	if err != nil {
		t.Fatal(err)
	}
	if key.Public() != k.Public() {
		t.Fatal("Key is not the key named b.sec")
	}
	var dk [32]byte
	rand.Read(dk[:])
	p, err := header.SealPacket(key, r.Public(), header.DataKeyPayload(&dk), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.WriterPublicKey != k.Public() {
		t.Error("the packet does not name the key as its writer")
	}
	if pt, err := p.Open(r); err != nil || !bytes.Equal(pt, header.DataKeyPayload(&dk)) {
		t.Errorf("the recipient opens the agent's packet: %v", err)
	}
	if pt, err := p.OpenAsWriter(k, r.Public()); err != nil || !bytes.Equal(pt, header.DataKeyPayload(&dk)) {
		t.Errorf("the secret key opens the agent's packet as its writer: %v", err)
	}
	own, _ := header.SealPacket(k, r.Public(), header.DataKeyPayload(&dk), nil)
	if pt, err := own.OpenAsWriter(key, r.Public()); err != nil || !bytes.Equal(pt, header.DataKeyPayload(&dk)) {
		t.Errorf("the agent opens the key's packet as its writer: %v", err)
	}
	if _, err := own.OpenAsWriter(key, k.Public()); !errors.Is(err, header.ErrPacketAuth) {
		t.Errorf("a packet for another recipient, as its writer: %v", err)
	}
	const label = "crypt4gh serve: data URLs v1"
	want, _ := k.Derive(label)
	if got, err := key.Derive(label); err != nil || !bytes.Equal(got, want) {
		t.Errorf("Derive through the agent: %x, %v; want %x", got, err, want)
	}
	if _, err := key.Derive("ssh: anything"); errkind.Of(err) != errkind.Usage {
		t.Errorf("Derive outside the namespace: %v", err)
	}
}
