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

func aesCTR(key, iv, ct, _ []byte) bool {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	cipher.NewCTR(b, iv).XORKeyStream(ct, ct)
	return true
}

func aesCBC(key, iv, ct, _ []byte) bool {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	cipher.NewCBCDecrypter(b, iv).CryptBlocks(ct, ct)
	return true
}

func aesGCM(key, iv, ct, tag []byte) bool {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	g, err := cipher.NewGCM(b)
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

// parseOpenSSHSecret decodes the bytes inside an OPENSSH PRIVATE KEY armor
// (PROTOCOL.key in the OpenSSH sources):
//
//	"openssh-key-v1\0" string ciphername, string kdfname, string kdfoptions,
//	u32 number of keys (1), string public key, string encrypted section
//	[, tag for AEAD ciphers]
//
// and the decrypted section: u32 checkint ×2, string keytype, string pub,
// string priv (seed||pub), string comment, padding 1, 2, 3, …
func parseOpenSSHSecret(blob []byte, passphrase func() ([]byte, error)) (SecretKey, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(sshMagic))
	if !ok {
		return SecretKey{}, malformed("OpenSSH private key does not start with %q", "openssh-key-v1")
	}
	cipherName, rest, ok1 := string32(rest)
	kdfName, rest, ok2 := string32(rest)
	kdfOptions, rest, ok3 := string32(rest)
	nKeys, rest, ok4 := uint32BE(rest)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return SecretKey{}, malformed("OpenSSH private key: truncated header")
	}
	if nKeys != 1 {
		return SecretKey{}, fmt.Errorf("%w: OpenSSH private key file with %d keys", ErrUnsupportedKey, nKeys)
	}
	pubBlob, rest, ok := string32(rest)
	if !ok {
		return SecretKey{}, malformed("OpenSSH private key: truncated public key")
	}
	keyType, pubRest, ok := string32(pubBlob)
	if !ok {
		return SecretKey{}, malformed("OpenSSH private key: truncated key type")
	}
	if string(keyType) != sshEd25519 {
		return SecretKey{}, fmt.Errorf("%w: OpenSSH key type %q", ErrUnsupportedKey, printable(keyType))
	}
	pub, pubRest, ok := string32(pubRest)
	if !ok || len(pub) != ed25519.PublicKeySize || len(pubRest) != 0 {
		return SecretKey{}, malformed("OpenSSH private key: bad ed25519 public key")
	}
	section, rest, ok := string32(rest)
	if !ok {
		return SecretKey{}, malformed("OpenSSH private key: truncated private section")
	}

	var c sshCipher
	encrypted := string(cipherName) != "none"
	if encrypted {
		if c, ok = sshCiphers[string(cipherName)]; !ok {
			return SecretKey{}, fmt.Errorf("%w: OpenSSH private key cipher %q", ErrUnsupportedKey, printable(cipherName))
		}
	} else {
		c.blockSize = 8
	}
	if len(rest) != c.tagLen {
		return SecretKey{}, malformed("OpenSSH private key: %d bytes after the private section, want %d", len(rest), c.tagLen)
	}
	if len(section) == 0 || len(section)%c.blockSize != 0 {
		return SecretKey{}, malformed("OpenSSH private key: private section of %d bytes", len(section))
	}
	// Decrypt a copy: section aliases the caller's data.
	plain := bytes.Clone(section)
	defer clear(plain)

	switch {
	case !encrypted && string(kdfName) != "none":
		return SecretKey{}, malformed("OpenSSH private key: kdf %q without a cipher", printable(kdfName))
	case !encrypted && len(kdfOptions) != 0:
		return SecretKey{}, malformed("OpenSSH private key: kdf options without a kdf")
	case encrypted && string(kdfName) == "none":
		return SecretKey{}, malformed("OpenSSH private key: cipher %q without a kdf", cipherName)
	case encrypted && string(kdfName) != "bcrypt":
		return SecretKey{}, fmt.Errorf("%w: OpenSSH private key kdf %q", ErrUnsupportedKey, printable(kdfName))
	case encrypted:
		salt, optRest, ok1 := string32(kdfOptions)
		rounds, optRest, ok2 := uint32BE(optRest)
		if !ok1 || !ok2 || len(optRest) != 0 || len(salt) == 0 || rounds < 1 {
			return SecretKey{}, malformed("OpenSSH private key: bad bcrypt options")
		}
		if rounds > maxSSHBcryptRounds {
			return SecretKey{}, fmt.Errorf("%w: OpenSSH private key with %d bcrypt rounds (limit %d)",
				ErrUnsupportedKey, rounds, maxSSHBcryptRounds)
		}
		pass, err := getPassphrase(passphrase)
		if err != nil {
			return SecretKey{}, err
		}
		if len(pass) == 0 {
			return SecretKey{}, fmt.Errorf("empty passphrase for an encrypted OpenSSH private key: %w", ErrWrongPassphrase)
		}
		kiv, err := BcryptPBKDF(pass, salt, int(rounds), c.keyLen+c.ivLen)
		if err != nil {
			return SecretKey{}, malformed("OpenSSH private key: %v", err)
		}
		ok := c.decrypt(kiv[:c.keyLen], kiv[c.keyLen:], plain, rest)
		clear(kiv)
		if !ok {
			return SecretKey{}, fmt.Errorf("failed to decrypt OpenSSH private key: %w", ErrWrongPassphrase)
		}
	}

	check1, p, ok1 := uint32BE(plain)
	check2, p, ok2 := uint32BE(p)
	if !ok1 || !ok2 {
		return SecretKey{}, malformed("OpenSSH private key: truncated private section")
	}
	if check1 != check2 {
		if encrypted {
			return SecretKey{}, fmt.Errorf("failed to decrypt OpenSSH private key: %w", ErrWrongPassphrase)
		}
		return SecretKey{}, malformed("OpenSSH private key: check integers differ")
	}
	keyType2, p, ok1 := string32(p)
	pub2, p, ok2 := string32(p)
	priv, p, ok3 := string32(p)
	_, p, ok4 = string32(p) // comment
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return SecretKey{}, malformed("OpenSSH private key: truncated private section")
	}
	for i, b := range p {
		if b != byte(i+1) {
			return SecretKey{}, malformed("OpenSSH private key: bad padding")
		}
	}
	if string(keyType2) != sshEd25519 || !bytes.Equal(pub2, pub) || len(priv) != ed25519.PrivateKeySize ||
		!bytes.Equal(priv[ed25519.SeedSize:], pub) {
		return SecretKey{}, malformed("OpenSSH private key: private and public parts differ")
	}
	derived := ed25519.NewKeyFromSeed(priv[:ed25519.SeedSize])
	same := subtle.ConstantTimeCompare(derived[ed25519.SeedSize:], pub) == 1
	sk := Ed25519SecretToX25519(derived)
	clear(derived)
	if !same {
		sk.Zero()
		return SecretKey{}, malformed("OpenSSH private key: the seed does not give the public key")
	}
	return sk, nil
}
