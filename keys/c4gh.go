package keys

import (
	"bytes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"

	"github.com/c4gh-go/crypt4gh/internal/bcryptpbkdf"
	"github.com/c4gh-go/crypt4gh/internal/kdfcost"
)

// KDF names the key derivation function that protects a crypt4gh secret key
// file. The values are the names stored in the file.
type KDF string

// The KDFs of crypt4gh secret key files.
const (
	// KDFScrypt is scrypt with N=2^14, r=8, p=1 (the rounds field is
	// ignored and written as 0). It is the default of [MarshalSecretKey].
	KDFScrypt KDF = "scrypt"
	// KDFBcrypt is OpenSSH's bcrypt_pbkdf (bcrypt_pbkdf) with the stored
	// rounds; [MarshalSecretKey] writes 100.
	KDFBcrypt KDF = "bcrypt"
	// KDFPBKDF2 is PBKDF2-HMAC-SHA256 with the stored rounds;
	// [MarshalSecretKey] writes 100000.
	KDFPBKDF2 KDF = "pbkdf2_hmac_sha256"
	// KDFNone stores the secret key unencrypted.
	KDFNone KDF = "none"
)

// Limits on the stored rounds, so that a hostile key file cannot make the
// parser run for hours. They are far above what any tool writes.
const (
	maxBcryptRounds = 1 << 16
	maxPBKDF2Rounds = 1 << 26
)

const (
	c4ghMagic           = "c4gh-v1"
	c4ghCipherChaCha    = "chacha20_poly1305"
	c4ghCipherNone      = "none"
	c4ghSaltSize        = 16
	c4ghEncryptedKeyLen = chacha20poly1305.NonceSize + KeySize + chacha20poly1305.Overhead

	pemC4GHPublic           = "CRYPT4GH PUBLIC KEY"
	pemC4GHPrivate          = "CRYPT4GH PRIVATE KEY"
	pemC4GHEncryptedPrivate = "CRYPT4GH ENCRYPTED PRIVATE KEY" // written by neicnordic/crypt4gh
)

// newKeyRounds returns the rounds MarshalSecretKey stores for kdf: those
// of the reference implementation (crypt4gh 1.8.6), unless a test binary
// lowered them for the keys its tests make (see internal/kdfcost). scrypt
// stores 0.
func newKeyRounds(kdf KDF) uint32 {
	switch kdf {
	case KDFBcrypt:
		return kdfcost.Bcrypt()
	case KDFPBKDF2:
		return kdfcost.PBKDF2()
	}
	return 0
}

// The two costly KDFs are variables only so that the package's tests can
// remember what each set of inputs derived: they open the same vector
// files many times (see kdfmemo_test.go). Nothing else assigns them.
var (
	bcryptKey = bcryptpbkdf.Key
	scryptKey = scrypt.Key
)

// deriveKey returns the 32-byte key that kdf derives from passphrase.
func deriveKey(kdf KDF, passphrase, salt []byte, rounds uint32) ([]byte, error) {
	switch kdf {
	case KDFScrypt:
		return scryptKey(passphrase, salt, 1<<14, 8, 1, chacha20poly1305.KeySize)
	case KDFBcrypt:
		if rounds < 1 || rounds > maxBcryptRounds {
			return nil, fmt.Errorf("bcrypt rounds %d outside 1…%d", rounds, maxBcryptRounds)
		}
		return bcryptKey(passphrase, salt, int(rounds), chacha20poly1305.KeySize)
	case KDFPBKDF2:
		if rounds < 1 || rounds > maxPBKDF2Rounds {
			return nil, fmt.Errorf("pbkdf2 rounds %d outside 1…%d", rounds, maxPBKDF2Rounds)
		}
		return pbkdf2.Key(sha256.New, string(passphrase), salt, int(rounds), chacha20poly1305.KeySize)
	}
	return nil, fmt.Errorf("%w: unknown kdf %q", ErrUnsupportedKey, string(kdf))
}

// string16 splits a u16 BE length-prefixed string off b.
func string16(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, b, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b)-2 < n {
		return nil, b, false
	}
	return b[2 : 2+n], b[2+n:], true
}

func appendString16(dst []byte, s []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedKey}, a...)...)
}

// c4ghSecretFile holds the fields of a crypt4gh secret key as
// decodeC4GHSecret splits them. The slices alias the decoded bytes.
type c4ghSecretFile struct {
	kdf     KDF
	rounds  uint32 // the first 4 bytes of the kdf options; 0 with KDFNone
	salt    []byte // the rest of the kdf options; nil with KDFNone
	cipher  []byte
	keyData []byte // the clear key with KDFNone, else nonce||ciphertext||tag
	comment []byte // nil when the file has none
}

// decodeC4GHSecret splits blob, the bytes inside a CRYPT4GH PRIVATE KEY
// armor:
//
//	"c4gh-v1" string16 kdfname [string16 kdfoptions (u32 rounds, salt)]
//	string16 ciphername string16 keydata [string16 comment]
//
// where kdfoptions is absent when kdfname is "none". It checks the magic,
// that the KDF is one of ours, every length, and that nothing follows the
// comment. It does not check that the cipher, key data and rounds suit the
// KDF: that is for the caller who decrypts ([c4ghSecretFile.check]).
func decodeC4GHSecret(blob []byte) (c4ghSecretFile, error) {
	var f c4ghSecretFile
	rest, ok := bytes.CutPrefix(blob, []byte(c4ghMagic))
	if !ok {
		return f, malformed("crypt4gh secret key does not start with %q", c4ghMagic)
	}
	kdfName, rest, ok := string16(rest)
	if !ok {
		return f, malformed("crypt4gh secret key: truncated kdf name")
	}
	f.kdf = KDF(kdfName)
	switch f.kdf {
	case KDFScrypt, KDFBcrypt, KDFPBKDF2, KDFNone:
	default:
		return f, fmt.Errorf("%w: crypt4gh secret key: unknown kdf %q", ErrUnsupportedKey, printable(kdfName))
	}
	if f.kdf != KDFNone {
		var kdfOptions []byte
		if kdfOptions, rest, ok = string16(rest); !ok {
			return f, malformed("crypt4gh secret key: truncated kdf options")
		}
		if len(kdfOptions) < 4 {
			return f, malformed("crypt4gh secret key: kdf options of %d bytes", len(kdfOptions))
		}
		f.rounds, f.salt = binary.BigEndian.Uint32(kdfOptions), kdfOptions[4:]
	}
	if f.cipher, rest, ok = string16(rest); !ok {
		return f, malformed("crypt4gh secret key: truncated cipher name")
	}
	if f.keyData, rest, ok = string16(rest); !ok {
		return f, malformed("crypt4gh secret key: truncated key data")
	}
	if len(rest) > 0 {
		// The optional comment, stored in clear; nothing may follow it.
		if f.comment, rest, ok = string16(rest); !ok {
			return f, malformed("crypt4gh secret key: truncated comment")
		}
		if len(rest) > 0 {
			return f, malformed("crypt4gh secret key: %d bytes of trailing data", len(rest))
		}
	}
	return f, nil
}

// check reports whether the cipher, key data and KDF rounds of f make
// sense for its KDF, so that the passphrase is asked for only when the
// file could be decrypted.
func (f *c4ghSecretFile) check() error {
	if f.kdf == KDFNone {
		if string(f.cipher) != c4ghCipherNone {
			return malformed("crypt4gh secret key: cipher %q without a kdf", printable(f.cipher))
		}
		if len(f.keyData) != KeySize {
			return malformed("crypt4gh secret key: key data of %d bytes, want %d", len(f.keyData), KeySize)
		}
		return nil
	}
	if string(f.cipher) != c4ghCipherChaCha {
		return fmt.Errorf("%w: crypt4gh secret key: unknown cipher %q", ErrUnsupportedKey, printable(f.cipher))
	}
	if len(f.keyData) != c4ghEncryptedKeyLen {
		return malformed("crypt4gh secret key: encrypted key data of %d bytes, want %d",
			len(f.keyData), c4ghEncryptedKeyLen)
	}
	switch kdf, rounds := f.kdf, f.rounds; {
	case kdf == KDFBcrypt && (rounds < 1 || len(f.salt) == 0):
		return malformed("crypt4gh secret key: bcrypt with %d rounds and a %d-byte salt", rounds, len(f.salt))
	case kdf == KDFPBKDF2 && rounds < 1:
		return malformed("crypt4gh secret key: pbkdf2 with 0 rounds")
	case kdf == KDFBcrypt && rounds > maxBcryptRounds:
		return fmt.Errorf("%w: crypt4gh secret key: %s with %d rounds (limit %d)", ErrUnsupportedKey, kdf, rounds, maxBcryptRounds)
	case kdf == KDFPBKDF2 && rounds > maxPBKDF2Rounds:
		return fmt.Errorf("%w: crypt4gh secret key: %s with %d rounds (limit %d)", ErrUnsupportedKey, kdf, rounds, maxPBKDF2Rounds)
	}
	return nil
}

// parseC4GHSecret decodes the bytes inside a CRYPT4GH PRIVATE KEY armor.
func parseC4GHSecret(blob []byte, passphrase func() ([]byte, error)) (SecretKey, error) {
	f, err := decodeC4GHSecret(blob)
	if err != nil {
		return SecretKey{}, err
	}
	if err := f.check(); err != nil {
		return SecretKey{}, err
	}
	var sk SecretKey
	if f.kdf == KDFNone {
		copy(sk[:], f.keyData)
		if sk == (SecretKey{}) {
			return SecretKey{}, malformed("crypt4gh secret key is all zeros")
		}
		return sk, nil
	}

	pass, err := getPassphrase(passphrase)
	if err != nil {
		return SecretKey{}, err
	}
	aead, err := c4ghAEAD(f.kdf, pass, f.salt, f.rounds)
	if err != nil {
		return SecretKey{}, fmt.Errorf("failed to derive the key of a crypt4gh secret key: %w", err)
	}
	nonce, ct := f.keyData[:chacha20poly1305.NonceSize], f.keyData[chacha20poly1305.NonceSize:]
	plain, err := aead.Open(sk[:0], nonce, ct, nil)
	if err != nil {
		return SecretKey{}, fmt.Errorf("failed to decrypt crypt4gh secret key: %w", ErrWrongPassphrase)
	}
	if len(plain) != KeySize || sk == (SecretKey{}) {
		sk.Zero()
		return SecretKey{}, malformed("crypt4gh secret key decrypts to an all-zero key")
	}
	return sk, nil
}

// c4ghAEAD returns the ChaCha20-Poly1305 that protects a crypt4gh secret
// key, under the key that kdf derives from passphrase. The derived key is
// cleared before it returns.
func c4ghAEAD(kdf KDF, passphrase, salt []byte, rounds uint32) (cipher.AEAD, error) {
	key, err := deriveKey(kdf, passphrase, salt, rounds)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	return aead, nil
}

// getPassphrase calls passphrase, or reports that one is needed.
func getPassphrase(passphrase func() ([]byte, error)) ([]byte, error) {
	if passphrase == nil {
		return nil, fmt.Errorf("key is protected: %w", ErrPassphraseRequired)
	}
	pass, err := passphrase()
	if errors.Is(err, ErrPassphraseRequired) {
		return nil, err // says it all
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read passphrase: %w", err)
	}
	return pass, nil
}

// MarshalPublicKey returns pk in the crypt4gh public key format: PEM armor
// "CRYPT4GH PUBLIC KEY" around the base64 of the key, with a trailing
// newline.
func MarshalPublicKey(pk PublicKey) []byte {
	return armor(pemC4GHPublic, pk[:])
}

// armor writes the PEM armor the way crypt4gh 1.8.6 does: the base64 on a
// single line.
func armor(typ string, b []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString("-----BEGIN " + typ + "-----\n")
	buf.WriteString(base64.StdEncoding.EncodeToString(b))
	buf.WriteString("\n-----END " + typ + "-----\n")
	return buf.Bytes()
}

// MarshalSecretKey returns sk in the crypt4gh secret key format (PEM armor
// "CRYPT4GH PRIVATE KEY", as crypt4gh 1.8.6 writes it), encrypted with
// ChaCha20-Poly1305 under a key that kdf derives from passphrase, with a
// random 16-byte salt and 12-byte nonce read from rand (crypto/rand when nil).
//
// kdf "" means [KDFScrypt]. With [KDFNone] the key is stored in clear and
// passphrase must be empty; with any other KDF passphrase must not be empty
// (the error wraps [ErrPassphraseRequired]). comment is stored in clear and
// omitted when empty; it is limited to 65535 bytes.
func MarshalSecretKey(sk *SecretKey, passphrase []byte, kdf KDF, comment string, rand io.Reader) ([]byte, error) {
	if kdf == "" {
		kdf = KDFScrypt
	}
	if rand == nil {
		rand = cryptoRand
	}
	if len(comment) > 0xffff {
		return nil, fmt.Errorf("comment of %d bytes is too long", len(comment))
	}
	if *sk == (SecretKey{}) {
		return nil, fmt.Errorf("refusing to write an all-zero secret key")
	}
	blob := []byte(c4ghMagic)
	blob = appendString16(blob, []byte(kdf))
	switch kdf {
	case KDFNone:
		if len(passphrase) > 0 {
			return nil, fmt.Errorf("a passphrase was given with kdf %q", kdf)
		}
		blob = appendString16(blob, []byte(c4ghCipherNone))
		blob = appendString16(blob, sk[:])
	case KDFScrypt, KDFBcrypt, KDFPBKDF2:
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("kdf %q: %w", kdf, ErrPassphraseRequired)
		}
		opts := make([]byte, 4+c4ghSaltSize)
		rounds := newKeyRounds(kdf)
		binary.BigEndian.PutUint32(opts, rounds)
		if _, err := io.ReadFull(rand, opts[4:]); err != nil {
			return nil, fmt.Errorf("failed to generate salt: %w", err)
		}
		aead, err := c4ghAEAD(kdf, passphrase, opts[4:], rounds)
		if err != nil {
			return nil, fmt.Errorf("failed to derive key: %w", err)
		}
		keyData := make([]byte, chacha20poly1305.NonceSize, c4ghEncryptedKeyLen)
		if _, err := io.ReadFull(rand, keyData); err != nil {
			return nil, fmt.Errorf("failed to generate nonce: %w", err)
		}
		keyData = aead.Seal(keyData, keyData, sk[:], nil)
		blob = appendString16(blob, opts)
		blob = appendString16(blob, []byte(c4ghCipherChaCha))
		blob = appendString16(blob, keyData)
	default:
		return nil, fmt.Errorf("%w: unknown kdf %q", ErrUnsupportedKey, string(kdf))
	}
	if comment != "" {
		blob = appendString16(blob, []byte(comment))
	}
	out := armor(pemC4GHPrivate, blob)
	clear(blob) // holds the clear key with KDFNone
	return out, nil
}

var cryptoRand = rand.Reader
