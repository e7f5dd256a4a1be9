package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// keyFile is one key file of the test data, with what it holds.
type keyFile struct {
	path    string
	secret  bool
	pass    *string // nil: unprotected
	comment *string // crypt4gh secret keys: the stored comment
}

// allKeyFiles lists the interop keys, and the ssh-keygen, openssl and
// relabelled keys of testdata/keys that this package supports.
func allKeyFiles(t testing.TB) []keyFile {
	var files []keyFile
	for _, k := range loadManifestKeys(t) {
		files = append(files, keyFile{filepath.Join(interopDir, k.Path), k.Type == "secret", k.Passphrase, k.Comment})
	}
	for _, c := range sshTestKeys {
		p := c.pass
		files = append(files,
			keyFile{path: filepath.Join(sshKeysDir, c.file), secret: true, pass: &p},
			keyFile{path: filepath.Join(sshKeysDir, c.file+".pub")})
	}
	return append(files, newFormatKeyFiles()...)
}

func parseAny(kf keyFile, data []byte, pass func() ([]byte, error)) ([KeySize]byte, error) {
	if kf.secret {
		sk, err := ParseSecretKey(data, pass)
		return sk, err
	}
	pk, err := ParsePublicKey(data)
	return pk, err
}

// TestTruncatedKeys cuts the payload of every key file (the PEM body, or the
// base64 blob of an ssh public key line) at every length and checks for
// ErrMalformedKey, without the passphrase being asked for. The only
// truncation that stays valid is a crypt4gh secret key cut just before its
// optional comment.
func TestTruncatedKeys(t *testing.T) {
	for _, kf := range allKeyFiles(t) {
		t.Run(kf.path, func(t *testing.T) {
			data := readFile(t, kf.path)
			skipBcryptUnderRace(t, usesBcrypt(data))
			var payload []byte
			var rebuild func([]byte) []byte
			if block, _ := pem.Decode(data); block != nil {
				payload = block.Bytes
				rebuild = func(b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: b}) }
			} else {
				fields := strings.Fields(string(data))
				var err error
				if payload, err = base64.StdEncoding.DecodeString(fields[1]); err != nil {
					t.Fatal(err)
				}
				rebuild = func(b []byte) []byte {
					return []byte(fields[0] + " " + base64.StdEncoding.EncodeToString(b) + " comment\n")
				}
			}
			want, err := parseAny(kf, data, passOf(kf))
			if err != nil {
				t.Fatal(err)
			}
			validCut := -1
			if kf.comment != nil && kf.secret && strings.HasPrefix(string(payload), c4ghMagic) {
				validCut = len(payload) - 2 - len(*kf.comment)
			}
			for n := range len(payload) {
				pass := noPassphrase(t)
				if n == validCut {
					pass = passOf(kf)
				}
				got, err := parseAny(kf, rebuild(payload[:n]), pass)
				switch {
				case n == validCut:
					if err != nil || got != want {
						t.Errorf("cut before the comment: got %x, %v; want the key", got, err)
					}
				case !errors.Is(err, ErrMalformedKey):
					t.Errorf("cut at %d of %d: got %v, want ErrMalformedKey", n, len(payload), err)
				case got != [KeySize]byte{}:
					t.Errorf("cut at %d: key returned with an error", n)
				}
			}
			// Cutting the file itself must never give a zero key or panic;
			// a cut inside an ssh comment is still a valid key.
			for n := range len(data) {
				got, err := parseAny(kf, data[:n], func() ([]byte, error) { return nil, ErrPassphraseRequired })
				if err == nil && got != want {
					t.Errorf("file cut at %d: got another key %x without an error", n, got)
				}
				if err != nil && got != [KeySize]byte{} {
					t.Errorf("file cut at %d: key returned with an error", n)
				}
			}
		})
	}
}

func passOf(kf keyFile) func() ([]byte, error) {
	if kf.pass == nil {
		return nil
	}
	return constPass(*kf.pass)
}

func c4ghBlob(parts ...string) []byte {
	b := []byte(c4ghMagic)
	for _, p := range parts {
		b = appendString16(b, []byte(p))
	}
	return b
}

func armored(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }

func appendString32(b []byte, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// sshKey builds an unencrypted openssh-key-v1 file around an ed25519 key,
// with hooks to damage it.
type sshKey struct {
	cipher, kdf       string
	nKeys             uint32
	pubType, privType string
	check2Delta       uint32
	pubInSection      []byte
	priv              []byte
	pad               []byte
	tail              []byte
}

func newSSHKey(seed byte) (sshKey, ed25519.PrivateKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
	return sshKey{cipher: "none", kdf: "none", nKeys: 1, pubType: sshEd25519, privType: sshEd25519,
		priv: priv, pubInSection: priv[32:], pad: nil}, priv
}

func (k sshKey) encode() []byte {
	pub := k.priv[32:]
	var pubBlob []byte
	pubBlob = appendString32(pubBlob, []byte(k.pubType))
	pubBlob = appendString32(pubBlob, pub)
	sec := binary.BigEndian.AppendUint32(nil, 0x01020304)
	sec = binary.BigEndian.AppendUint32(sec, 0x01020304+k.check2Delta)
	sec = appendString32(sec, []byte(k.privType))
	sec = appendString32(sec, k.pubInSection)
	sec = appendString32(sec, k.priv)
	sec = appendString32(sec, []byte("comment"))
	if k.pad != nil {
		sec = append(sec, k.pad...)
	} else {
		for i := 1; len(sec)%8 != 0; i++ {
			sec = append(sec, byte(i))
		}
	}
	b := []byte(sshMagic)
	b = appendString32(b, []byte(k.cipher))
	b = appendString32(b, []byte(k.kdf))
	b = appendString32(b, nil)
	b = binary.BigEndian.AppendUint32(b, k.nKeys)
	b = appendString32(b, pubBlob)
	b = appendString32(b, sec)
	b = append(b, k.tail...)
	return armored(pemOpenSSH, b)
}

// TestDamagedKeys feeds hand-made damaged key files and checks the error
// class and, for unsupported algorithms, that the error names them.
func TestDamagedKeys(t *testing.T) {
	zero32 := string(make([]byte, 32))
	key32 := strings.Repeat("k", 32)
	opts := "\x00\x00\x00\x00" + strings.Repeat("s", 16)
	good, goodPriv := newSSHKey(7)
	mod := func(f func(*sshKey)) []byte { k := good; f(&k); return k.encode() }

	tests := []struct {
		name   string
		secret bool
		data   []byte
		want   error
		names  string // the error message must contain it
	}{
		{"empty secret", true, nil, ErrMalformedKey, ""},
		{"empty public", false, nil, ErrMalformedKey, ""},
		{"text", true, []byte("hello world\n"), ErrMalformedKey, ""},
		{"text public", false, []byte("hello world\n"), ErrMalformedKey, ""},
		{"bad base64", true, []byte("-----BEGIN CRYPT4GH PRIVATE KEY-----\n!!!!\n-----END CRYPT4GH PRIVATE KEY-----\n"), ErrMalformedKey, ""},
		{"bad base64 public", false, []byte("-----BEGIN CRYPT4GH PUBLIC KEY-----\n!!!!\n-----END CRYPT4GH PUBLIC KEY-----\n"), ErrMalformedKey, ""},
		{"c4gh bad magic", true, armored(pemC4GHPrivate, append([]byte("c4gh-v2"), c4ghBlob("none", "none", key32)[7:]...)), ErrMalformedKey, ""},
		{"c4gh unknown kdf", true, armored(pemC4GHPrivate, c4ghBlob("argon2id", opts, c4ghCipherChaCha, strings.Repeat("x", 60))), ErrUnsupportedKey, "argon2id"},
		{"c4gh unknown cipher", true, armored(pemC4GHPrivate, c4ghBlob("scrypt", opts, "aes256_gcm", strings.Repeat("x", 60))), ErrUnsupportedKey, "aes256_gcm"},
		{"c4gh short key data", true, armored(pemC4GHPrivate, c4ghBlob("scrypt", opts, c4ghCipherChaCha, strings.Repeat("x", 59))), ErrMalformedKey, ""},
		{"c4gh short kdf options", true, armored(pemC4GHPrivate, c4ghBlob("scrypt", "abc", c4ghCipherChaCha, strings.Repeat("x", 60))), ErrMalformedKey, ""},
		{"c4gh bcrypt 0 rounds", true, armored(pemC4GHPrivate, c4ghBlob("bcrypt", opts, c4ghCipherChaCha, strings.Repeat("x", 60))), ErrMalformedKey, ""},
		{"c4gh pbkdf2 huge rounds", true, armored(pemC4GHPrivate, c4ghBlob("pbkdf2_hmac_sha256", "\xff\xff\xff\xff"+opts[4:], c4ghCipherChaCha, strings.Repeat("x", 60))), ErrUnsupportedKey, "pbkdf2"},
		{"c4gh none with cipher", true, armored(pemC4GHPrivate, c4ghBlob("none", c4ghCipherChaCha, key32)), ErrMalformedKey, ""},
		{"c4gh none short key", true, armored(pemC4GHPrivate, c4ghBlob("none", "none", key32[:31])), ErrMalformedKey, ""},
		{"c4gh zero key", true, armored(pemC4GHPrivate, c4ghBlob("none", "none", zero32)), ErrMalformedKey, ""},
		{"c4gh trailing data", true, armored(pemC4GHPrivate, append(c4ghBlob("none", "none", key32, "comment"), 0)), ErrMalformedKey, ""},
		{"c4gh zero public key", false, armored(pemC4GHPublic, make([]byte, 32)), ErrMalformedKey, ""},
		{"c4gh 33-byte public key", false, armored(pemC4GHPublic, make([]byte, 33)), ErrMalformedKey, ""},
		{"public key as secret", true, armored(pemC4GHPublic, []byte(key32)), ErrUnsupportedKey, pemC4GHPublic},
		{"secret key as public", false, armored(pemC4GHPrivate, c4ghBlob("none", "none", key32)), ErrUnsupportedKey, pemC4GHPrivate},
		{"unknown PEM type", true, armored("RSA PRIVATE KEY", []byte("x")), ErrUnsupportedKey, "RSA PRIVATE KEY"},
		{"pkcs8 garbage", true, armored(pemPKCS8, []byte("garbage")), ErrMalformedKey, ""},
		{"pkix garbage", false, armored(pemPKIX, []byte("garbage")), ErrMalformedKey, ""},
		{"ssh check integers differ", true, mod(func(k *sshKey) { k.check2Delta = 1 }), ErrMalformedKey, ""},
		{"ssh bad padding", true, mod(func(k *sshKey) { k.pad = []byte{1, 2, 4} }), ErrMalformedKey, ""},
		{"ssh section not a multiple of 8", true, mod(func(k *sshKey) { k.pad = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9} }), ErrMalformedKey, ""},
		{"ssh two keys", true, mod(func(k *sshKey) { k.nKeys = 2 }), ErrUnsupportedKey, "2 keys"},
		{"ssh unknown cipher", true, mod(func(k *sshKey) { k.cipher = "twofish-cbc"; k.kdf = "bcrypt" }), ErrUnsupportedKey, "twofish-cbc"},
		{"ssh cipher without kdf", true, mod(func(k *sshKey) { k.cipher = "aes256-ctr" }), ErrMalformedKey, ""},
		{"ssh kdf without cipher", true, mod(func(k *sshKey) { k.kdf = "bcrypt" }), ErrMalformedKey, ""},
		{"ssh key type", true, mod(func(k *sshKey) { k.pubType = "ssh-dss" }), ErrUnsupportedKey, "ssh-dss"},
		{"ssh private key type differs", true, mod(func(k *sshKey) { k.privType = "ssh-rsa" }), ErrMalformedKey, ""},
		{"ssh public key in section differs", true, mod(func(k *sshKey) { k.pubInSection = make([]byte, 32) }), ErrMalformedKey, ""},
		{"ssh seed does not match", true, mod(func(k *sshKey) {
			k.priv = append(bytes.Repeat([]byte{8}, 32), goodPriv[32:]...)
		}), ErrMalformedKey, ""},
		{"ssh trailing data", true, mod(func(k *sshKey) { k.tail = []byte{0} }), ErrMalformedKey, ""},
		{"ssh-rsa line", false, []byte("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDPpI718Q== x@y\n"), ErrUnsupportedKey, "ssh-rsa"},
		{"ssh line after comment lines", false, []byte("# a key\n\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDPpI718Q== x@y\n"), ErrUnsupportedKey, "ssh-rsa"},
		{"ssh line bad base64", false, []byte("ssh-ed25519 !!!! x@y\n"), ErrMalformedKey, ""},
	}
	// The baseline of the hand-made OpenSSH keys must parse.
	sk, err := ParseSecretKey(good.encode(), noPassphrase(t))
	if err != nil || sk != Ed25519SecretToX25519(goodPriv) {
		t.Fatalf("hand-made OpenSSH key: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [KeySize]byte
			var err error
			if tc.secret {
				got, err = ParseSecretKey(tc.data, noPassphrase(t))
			} else {
				got, err = ParsePublicKey(tc.data)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error %q does not name %q", err, tc.names)
			}
			if got != [KeySize]byte{} {
				t.Errorf("key returned with an error")
			}
		})
	}
	// A name read from the file is cut short in the message, and its
	// control characters are not printed.
	for kdf, blob := range map[string][]byte{
		"none":   c4ghBlob("none", strings.Repeat("\n", 60000), key32),
		"scrypt": c4ghBlob("scrypt", opts, strings.Repeat("\n", 60000), strings.Repeat("x", 60)),
	} {
		if _, err := ParseSecretKey(armored(pemC4GHPrivate, blob), noPassphrase(t)); err == nil || len(err.Error()) > 200 || strings.Contains(err.Error(), "\n") {
			t.Errorf("a cipher name of 60,000 newlines, kdf %s: %d bytes of error", kdf, len(err.Error()))
		}
	}
}
