package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/chacha20"
	//lint:ignore SA1019 OpenSSH's chacha20-poly1305@openssh.com needs the raw Poly1305 MAC
	"golang.org/x/crypto/poly1305"
)

const (
	sshMagic   = "openssh-key-v1\x00"
	sshEd25519 = "ssh-ed25519"
	// maxSSHBcryptRounds bounds the rounds of a hostile file; ssh-keygen
	// writes 16 unless told otherwise (-a).
	maxSSHBcryptRounds = 1 << 16
)

// string32 splits a u32 BE length-prefixed string off b.
func string32(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, b, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func uint32BE(b []byte) (v uint32, rest []byte, ok bool) {
	if len(b) < 4 {
		return 0, b, false
	}
	return binary.BigEndian.Uint32(b), b[4:], true
}

// sshCipher describes one cipher of the openssh-key-v1 container.
type sshCipher struct {
	keyLen, ivLen, blockSize, tagLen int
	// decrypt decrypts ct in place; it returns false when the tag (AEAD
	// ciphers only) does not verify.
	decrypt func(key, iv, ct, tag []byte) bool
}

// newAES returns the AES block cipher for a key of a length that sshCiphers
// lists, so an error is a bug here.
func newAES(key []byte) cipher.Block {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	return b
}

func aesCTR(key, iv, ct, _ []byte) bool {
	cipher.NewCTR(newAES(key), iv).XORKeyStream(ct, ct)
	return true
}

func aesCBC(key, iv, ct, _ []byte) bool {
	cipher.NewCBCDecrypter(newAES(key), iv).CryptBlocks(ct, ct)
	return true
}

func aesGCM(key, iv, ct, tag []byte) bool {
	g, err := cipher.NewGCM(newAES(key))
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	// Open needs ciphertext||tag in one slice.
	sealed := append(append(make([]byte, 0, len(ct)+len(tag)), ct...), tag...)
	_, err = g.Open(sealed[:0], iv, sealed, nil)
	if err == nil {
		copy(ct, sealed)
	}
	clear(sealed)
	return err == nil
}

// chachaPolyOpenSSH is chacha20-poly1305@openssh.com as OpenSSH applies it
// to a private key (sequence number 0, no additional data): the first 32
// bytes of the key drive ChaCha20; the Poly1305 key is its block 0, the
// data is encrypted from block 1 on, and the tag covers the ciphertext.
func chachaPolyOpenSSH(key, _, ct, tag []byte) bool {
	var nonce [chacha20.NonceSize]byte // the 64-bit sequence number 0, 32-bit counter high half 0
	c, err := chacha20.NewUnauthenticatedCipher(key[:32], nonce[:])
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	var polyKey [32]byte
	c.XORKeyStream(polyKey[:], polyKey[:])
	var t [poly1305.TagSize]byte
	copy(t[:], tag)
	ok := poly1305.Verify(&t, ct, &polyKey)
	clear(polyKey[:])
	if !ok {
		return false
	}
	c.SetCounter(1)
	c.XORKeyStream(ct, ct)
	return true
}

var sshCiphers = map[string]sshCipher{
	"aes128-ctr":                    {16, 16, 16, 0, aesCTR},
	"aes192-ctr":                    {24, 16, 16, 0, aesCTR},
	"aes256-ctr":                    {32, 16, 16, 0, aesCTR},
	"aes128-cbc":                    {16, 16, 16, 0, aesCBC},
	"aes192-cbc":                    {24, 16, 16, 0, aesCBC},
	"aes256-cbc":                    {32, 16, 16, 0, aesCBC},
	"aes128-gcm@openssh.com":        {16, 12, 16, 16, aesGCM},
	"aes256-gcm@openssh.com":        {32, 12, 16, 16, aesGCM},
	"chacha20-poly1305@openssh.com": {64, 0, 8, 16, chachaPolyOpenSSH},
}

// sshKeyFile holds the clear fields of an openssh-key-v1 file as
// decodeOpenSSHSecret splits them. The slices alias the decoded bytes.
type sshKeyFile struct {
	cipher, kdf, kdfOptions []byte
	pub                     []byte // the ed25519 public key, 32 bytes
	section                 []byte // the private section, encrypted unless cipher is "none"
	tag                     []byte // the bytes after the section: the tag of an AEAD cipher
}

// decodeOpenSSHSecret splits blob, the bytes inside an OPENSSH PRIVATE KEY
// armor (PROTOCOL.key in the OpenSSH sources):
//
//	"openssh-key-v1\0" string ciphername, string kdfname, string kdfoptions,
//	u32 number of keys (1), string public key, string private section
//	[, tag for AEAD ciphers]
//
// It checks the lengths and that the file holds one ed25519 key. It does
// not look at the cipher, KDF or tag: that is for the caller who decrypts.
func decodeOpenSSHSecret(blob []byte) (sshKeyFile, error) {
	var f sshKeyFile
	rest, ok := bytes.CutPrefix(blob, []byte(sshMagic))
	if !ok {
		return f, malformed("OpenSSH private key does not start with %q", "openssh-key-v1")
	}
	var ok1, ok2, ok3, ok4 bool
	f.cipher, rest, ok1 = string32(rest)
	f.kdf, rest, ok2 = string32(rest)
	f.kdfOptions, rest, ok3 = string32(rest)
	nKeys, rest, ok4 := uint32BE(rest)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return f, malformed("OpenSSH private key: truncated header")
	}
	if nKeys != 1 {
		return f, fmt.Errorf("%w: OpenSSH private key file with %d keys", ErrUnsupportedKey, nKeys)
	}
	pubBlob, rest, ok := string32(rest)
	if !ok {
		return f, malformed("OpenSSH private key: truncated public key")
	}
	keyType, pubRest, ok := string32(pubBlob)
	if !ok {
		return f, malformed("OpenSSH private key: truncated key type")
	}
	if string(keyType) != sshEd25519 {
		return f, fmt.Errorf("%w: OpenSSH key type %q", ErrUnsupportedKey, printable(keyType))
	}
	f.pub, pubRest, ok = string32(pubRest)
	if !ok || len(f.pub) != ed25519.PublicKeySize || len(pubRest) != 0 {
		return f, malformed("OpenSSH private key: bad ed25519 public key")
	}
	if f.section, f.tag, ok = string32(rest); !ok {
		return f, malformed("OpenSSH private key: truncated private section")
	}
	return f, nil
}

// sshPrivateSection holds the fields of a decrypted private section. The
// slices alias the section.
type sshPrivateSection struct {
	keyType, pub, priv, comment []byte
	padding                     []byte // should be 1, 2, 3, …
}

// decodeSSHPrivateSection splits a decrypted private section:
//
//	u32 checkint ×2, string keytype, string pub, string priv (seed||pub),
//	string comment, padding
//
// It compares the check integers before it reads further, so that garbage
// from a wrong passphrase is reported as ErrWrongPassphrase when encrypted
// is true, not as damage. It does not check the padding or the key.
func decodeSSHPrivateSection(plain []byte, encrypted bool) (sshPrivateSection, error) {
	var s sshPrivateSection
	check1, p, ok1 := uint32BE(plain)
	check2, p, ok2 := uint32BE(p)
	if !ok1 || !ok2 {
		return s, malformed("OpenSSH private key: truncated private section")
	}
	if check1 != check2 {
		if encrypted {
			return s, fmt.Errorf("failed to decrypt OpenSSH private key: %w", ErrWrongPassphrase)
		}
		return s, malformed("OpenSSH private key: check integers differ")
	}
	var ok3, ok4 bool
	s.keyType, p, ok1 = string32(p)
	s.pub, p, ok2 = string32(p)
	s.priv, p, ok3 = string32(p)
	s.comment, s.padding, ok4 = string32(p)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return s, malformed("OpenSSH private key: truncated private section")
	}
	return s, nil
}

// parseOpenSSHSecret decodes the bytes inside an OPENSSH PRIVATE KEY armor
// and decrypts the private section.
func parseOpenSSHSecret(blob []byte, passphrase func() ([]byte, error)) (SecretKey, error) {
	f, err := decodeOpenSSHSecret(blob)
	if err != nil {
		return SecretKey{}, err
	}
	var c sshCipher
	encrypted := string(f.cipher) != "none"
	if encrypted {
		var ok bool
		if c, ok = sshCiphers[string(f.cipher)]; !ok {
			return SecretKey{}, fmt.Errorf("%w: OpenSSH private key cipher %q", ErrUnsupportedKey, printable(f.cipher))
		}
	} else {
		c.blockSize = 8
	}
	if len(f.tag) != c.tagLen {
		return SecretKey{}, malformed("OpenSSH private key: %d bytes after the private section, want %d", len(f.tag), c.tagLen)
	}
	if len(f.section) == 0 || len(f.section)%c.blockSize != 0 {
		return SecretKey{}, malformed("OpenSSH private key: private section of %d bytes", len(f.section))
	}
	// Decrypt a copy: section aliases the caller's data.
	plain := bytes.Clone(f.section)
	defer clear(plain)

	switch {
	case !encrypted && string(f.kdf) != "none":
		return SecretKey{}, malformed("OpenSSH private key: kdf %q without a cipher", printable(f.kdf))
	case !encrypted && len(f.kdfOptions) != 0:
		return SecretKey{}, malformed("OpenSSH private key: kdf options without a kdf")
	case encrypted && string(f.kdf) == "none":
		return SecretKey{}, malformed("OpenSSH private key: cipher %q without a kdf", f.cipher)
	case encrypted && string(f.kdf) != "bcrypt":
		return SecretKey{}, fmt.Errorf("%w: OpenSSH private key kdf %q", ErrUnsupportedKey, printable(f.kdf))
	case encrypted:
		if err := decryptSSHSection(c, f.kdfOptions, plain, f.tag, passphrase); err != nil {
			return SecretKey{}, err
		}
	}

	s, err := decodeSSHPrivateSection(plain, encrypted)
	if err != nil {
		return SecretKey{}, err
	}
	for i, b := range s.padding {
		if b != byte(i+1) {
			return SecretKey{}, malformed("OpenSSH private key: bad padding")
		}
	}
	if string(s.keyType) != sshEd25519 || !bytes.Equal(s.pub, f.pub) || len(s.priv) != ed25519.PrivateKeySize ||
		!bytes.Equal(s.priv[ed25519.SeedSize:], f.pub) {
		return SecretKey{}, malformed("OpenSSH private key: private and public parts differ")
	}
	derived := ed25519.NewKeyFromSeed(s.priv[:ed25519.SeedSize])
	same := subtle.ConstantTimeCompare(derived[ed25519.SeedSize:], f.pub) == 1
	sk := Ed25519SecretToX25519(derived)
	clear(derived)
	if !same {
		sk.Zero()
		return SecretKey{}, malformed("OpenSSH private key: the seed does not give the public key")
	}
	return sk, nil
}

// decryptSSHSection decrypts section in place with c under the key and IV
// that bcrypt_pbkdf derives from the passphrase and kdfOptions (string
// salt, u32 rounds). It checks the options before it asks for the
// passphrase.
func decryptSSHSection(c sshCipher, kdfOptions, section, tag []byte, passphrase func() ([]byte, error)) error {
	salt, optRest, ok1 := string32(kdfOptions)
	rounds, optRest, ok2 := uint32BE(optRest)
	if !ok1 || !ok2 || len(optRest) != 0 || len(salt) == 0 || rounds < 1 {
		return malformed("OpenSSH private key: bad bcrypt options")
	}
	if rounds > maxSSHBcryptRounds {
		return fmt.Errorf("%w: OpenSSH private key with %d bcrypt rounds (limit %d)",
			ErrUnsupportedKey, rounds, maxSSHBcryptRounds)
	}
	pass, err := getPassphrase(passphrase)
	if err != nil {
		return err
	}
	if len(pass) == 0 {
		return fmt.Errorf("empty passphrase for an encrypted OpenSSH private key: %w", ErrWrongPassphrase)
	}
	kiv, err := bcryptKey(pass, salt, int(rounds), c.keyLen+c.ivLen)
	if err != nil {
		return malformed("OpenSSH private key: %v", err)
	}
	ok := c.decrypt(kiv[:c.keyLen], kiv[c.keyLen:], section, tag)
	clear(kiv)
	if !ok {
		return fmt.Errorf("failed to decrypt OpenSSH private key: %w", ErrWrongPassphrase)
	}
	return nil
}
