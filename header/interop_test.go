package header

import (
	"bytes"
	"crypto/ecdh"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/c4gh-go/crypt4gh/keys"
)

const interopDir = "../testdata/interop"

type manifest struct {
	Keys []struct {
		Path         string `json:"path"`
		Format       string `json:"format"`
		X25519PubHex string `json:"x25519_pk_hex"`
	} `json:"keys"`
	Cases []struct {
		Name          string   `json:"name"`
		File          string   `json:"file"`
		Kind          string   `json:"kind"`
		SK            string   `json:"sk"`
		SenderPK      string   `json:"sender_pk"`
		BodyFile      string   `json:"body_file"`
		ErrorClass    string   `json:"error_class"`
		EditList      []uint64 `json:"edit_list"`
		HeaderLen     *int64   `json:"header_len"`
		HeaderPackets *int     `json:"header_packets"`
	} `json:"cases"`
}

func loadManifest(t testing.TB) *manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(interopDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cases) == 0 {
		t.Fatal("manifest has no cases")
	}
	return &m
}

func (m *manifest) publicKey(t testing.TB, path string) keys.PublicKey {
	t.Helper()
	for _, k := range m.Keys {
		if k.Path == path {
			b, err := hex.DecodeString(k.X25519PubHex)
			if err != nil || len(b) != keys.KeySize {
				t.Fatalf("bad x25519_pk_hex for %s", path)
			}
			return keys.PublicKey(b)
		}
	}
	t.Fatalf("key %s not in manifest", path)
	return keys.PublicKey{}
}

// parseSentinel maps the manifest's header-level error classes to the
// sentinel Parse must return.
var parseSentinel = map[string]error{
	"bad-magic":           ErrNotCrypt4GH,
	"unsupported-version": ErrUnsupportedVersion,
	"empty-input":         ErrEmptyInput,
	"header-truncated":    ErrTruncated,
}

func TestParseInterop(t *testing.T) {
	m := loadManifest(t)
	type expect struct {
		sentinel error
		size     *int64
		packets  *int
	}
	want := map[string]*expect{}
	bodyFiles := map[string]bool{}
	for _, c := range m.Cases {
		e := want[c.File]
		if e == nil {
			e = &expect{}
			want[c.File] = e
		}
		if s, ok := parseSentinel[c.ErrorClass]; ok {
			e.sentinel = s
		}
		if c.Name == "reject_packet_count_too_large" {
			// The body's first bytes read as a 4 GB packet length, which
			// Parse refuses at once rather than reading on to find the
			// end of the input.
			e.sentinel = ErrInvalidPacket
		}
		if c.HeaderLen != nil {
			e.size, e.packets = c.HeaderLen, c.HeaderPackets
		}
		if c.BodyFile != "" {
			bodyFiles[c.BodyFile] = true
		}
	}

	files, err := filepath.Glob(filepath.Join(interopDir, "enc", "*.c4gh"))
	if err != nil || len(files) < 20 {
		t.Fatalf("interop files not found: %v (%d)", err, len(files))
	}
	for _, path := range files {
		rel := "enc/" + filepath.Base(path)
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := bytes.NewReader(data)
			h, err := Parse(r)
			e := want[rel]
			switch {
			case bodyFiles[rel]:
				// A body written on its own (encrypt --header) is not a
				// crypt4gh file.
				if !errors.Is(err, ErrNotCrypt4GH) {
					t.Fatalf("body file: got %v, want ErrNotCrypt4GH", err)
				}
				return
			case e == nil:
				t.Fatalf("%s is not in the manifest", rel)
			case e.sentinel != nil:
				if !errors.Is(err, e.sentinel) {
					t.Fatalf("got error %v, want %v", err, e.sentinel)
				}
				return
			case err != nil:
				t.Fatalf("Parse: %v", err)
			}
			size := h.Size()
			if got := int64(len(data)) - int64(r.Len()); got != size {
				t.Errorf("Parse consumed %d bytes, Size() = %d", got, size)
			}
			if !bytes.Equal(h.Marshal(), data[:size]) {
				t.Errorf("Marshal(Parse(b)) != b[:%d]", size)
			}
			if e.size != nil {
				if size != *e.size {
					t.Errorf("Size() = %d, manifest header_len = %d", size, *e.size)
				}
				if len(h.Packets) != *e.packets {
					t.Errorf("%d packets, manifest header_packets = %d", len(h.Packets), *e.packets)
				}
			}
			// The same parse through a reader that returns one byte at a
			// time: Parse needs no buffering and stops at the body.
			r2 := bytes.NewReader(data)
			h2, err := Parse(iotest.OneByteReader(r2))
			if err != nil {
				t.Fatalf("Parse (one byte reads): %v", err)
			}
			if h2.Size() != size || r2.Len() != len(data)-int(size) {
				t.Errorf("one byte reads: Size %d, left %d bytes", h2.Size(), r2.Len())
			}
		})
	}
}

// readerKey decodes the unencrypted secret keys of the interop set that need
// no KDF and no Ed25519 conversion: the crypt4gh key without KDF (dave) and
// the PKCS#8 X25519 key (hank). Decoding them here keeps these tests
// independent of the key-file parser of package keys. ok is false for the
// other keys.
func readerKey(t testing.TB, m *manifest, path string) (sk keys.SecretKey, ok bool) {
	t.Helper()
	var format string
	for _, k := range m.Keys {
		if k.Path == path {
			format = k.Format
		}
	}
	if format != "c4gh-none" && format != "openssl-x25519" {
		return keys.SecretKey{}, false
	}
	data, err := os.ReadFile(filepath.Join(interopDir, path))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	var raw []byte
	if format == "openssl-x25519" {
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		priv, ok := k.(*ecdh.PrivateKey)
		if !ok || priv.Curve() != ecdh.X25519() {
			t.Fatalf("%s: not an X25519 key", path)
		}
		raw = priv.Bytes()
	} else {
		b := block.Bytes
		if block.Type != "CRYPT4GH PRIVATE KEY" || !bytes.HasPrefix(b, []byte("c4gh-v1")) {
			t.Fatalf("%s: not a crypt4gh private key", path)
		}
		b = b[len("c4gh-v1"):]
		str := func() []byte {
			if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
				t.Fatalf("%s: truncated key", path)
			}
			n := int(binary.BigEndian.Uint16(b))
			s := b[2 : 2+n]
			b = b[2+n:]
			return s
		}
		if kdf, cipher := str(), str(); string(kdf) != "none" || string(cipher) != "none" {
			t.Fatalf("%s: kdf %q cipher %q, want none", path, kdf, cipher)
		}
		raw = str()
	}
	if len(raw) != keys.KeySize {
		t.Fatalf("%s: key of %d bytes", path, len(raw))
	}
	sk = keys.SecretKey(raw)
	if pk := sk.Public(); pk != m.publicKey(t, path) {
		t.Fatalf("%s: public key %s does not match the manifest", path, pk)
	}
	return sk, true
}

// TestDecryptInterop decrypts the headers of every case whose reader key
// readerKey can decode, and checks the reject cases that concern the header
// packets.
func TestDecryptInterop(t *testing.T) {
	m := loadManifest(t)
	n := 0
	for _, c := range m.Cases {
		sk, ok := readerKey(t, m, c.SK)
		if !ok || parseSentinel[c.ErrorClass] != nil {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(interopDir, c.File))
			if err != nil {
				t.Fatal(err)
			}
			h, err := Parse(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var sender *keys.PublicKey
			if c.SenderPK != "" {
				pk := m.publicKey(t, c.SenderPK)
				sender = &pk
			}
			got, err := h.Decrypt(&sk, sender)
			if c.ErrorClass == "no-decryptable-packet" {
				if !errors.Is(err, ErrNoDecryptablePacket) {
					t.Fatalf("got %v, want ErrNoDecryptablePacket", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decrypt: %v", err)
			}
			if len(got.DataKeys) == 0 || len(got.Opened) != len(got.Payloads) {
				t.Fatalf("contents: %d keys, %d opened, %d payloads", len(got.DataKeys), len(got.Opened), len(got.Payloads))
			}
			if got.HasEditList != (c.EditList != nil) || !slices.Equal(got.EditList, c.EditList) {
				t.Errorf("edit list %v (%v), want %v", got.EditList, got.HasEditList, c.EditList)
			}
			for _, i := range got.Opened {
				if _, err := h.Packets[i].Open(&sk); err != nil {
					t.Errorf("Open packet %d: %v", i, err)
				}
			}
			if sender != nil {
				// The same file with another required sender opens nothing.
				other := *sender
				other[0] ^= 1
				if _, err := h.Decrypt(&sk, &other); !errors.Is(err, ErrNoDecryptablePacket) {
					t.Errorf("wrong sender: got %v, want ErrNoDecryptablePacket", err)
				}
			}
			got.Zero()
		})
	}
	if n < 10 {
		t.Fatalf("only %d cases with a key readerKey decodes", n)
	}
}
