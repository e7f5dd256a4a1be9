package keys

import (
	"bytes"
	"encoding/pem"
	"fmt"
)

// SecretKeyFormat names the format of a secret key file.
type SecretKeyFormat string

// The secret key formats that [ParseSecretKey] reads.
const (
	FormatCrypt4GH SecretKeyFormat = "crypt4gh" // CRYPT4GH PRIVATE KEY (or ENCRYPTED PRIVATE KEY)
	FormatOpenSSH  SecretKeyFormat = "openssh"  // OPENSSH PRIVATE KEY, ed25519
	FormatPKCS8    SecretKeyFormat = "pkcs8"    // PRIVATE KEY, X25519
)

// SecretKeyInfo describes a secret key file as far as it can be read
// without the passphrase.
type SecretKeyInfo struct {
	// Format is the file format.
	Format SecretKeyFormat
	// Protected reports whether a passphrase is needed to read the key.
	Protected bool
	// KDF is the key derivation function of a crypt4gh key ([KDFNone]
	// when it is not protected). For OpenSSH keys it is [KDFBcrypt] when
	// the key is protected and [KDFNone] otherwise; for PKCS#8 keys it is
	// always [KDFNone].
	KDF KDF
	// Comment is the comment stored in clear in a crypt4gh key, or in an
	// unprotected OpenSSH key. The comment of a protected OpenSSH key is
	// encrypted with the key and is not reported.
	Comment string
}

// InspectSecretKey reads the format, protection and comment of a secret
// key file without decrypting it; the passphrase is not needed. It checks
// only the parts of the file that it reads: [ParseSecretKey] may still
// refuse a file that InspectSecretKey accepts. Errors wrap
// [ErrMalformedKey] or [ErrUnsupportedKey].
func InspectSecretKey(data []byte) (SecretKeyInfo, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		if bytes.Contains(data, []byte("-----BEGIN")) {
			return SecretKeyInfo{}, malformed("damaged PEM armor")
		}
		return SecretKeyInfo{}, malformed("no PEM armored secret key found")
	}
	defer clear(block.Bytes)
	switch block.Type {
	case pemC4GHPrivate, pemC4GHEncryptedPrivate:
		return inspectC4GH(block.Bytes)
	case pemOpenSSH:
		return inspectOpenSSH(block.Bytes)
	case pemPKCS8:
		return SecretKeyInfo{Format: FormatPKCS8, KDF: KDFNone}, nil
	case pemC4GHPublic, pemPKIX:
		return SecretKeyInfo{}, fmt.Errorf("%w: %q holds a public key, not a secret key", ErrUnsupportedKey, block.Type)
	}
	return SecretKeyInfo{}, fmt.Errorf("%w: PEM type %q", ErrUnsupportedKey, block.Type)
}

// inspectC4GH reads the clear fields of a crypt4gh secret key: kdf name,
// kdf options, cipher name, key data, comment.
func inspectC4GH(blob []byte) (SecretKeyInfo, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(c4ghMagic))
	if !ok {
		return SecretKeyInfo{}, malformed("crypt4gh secret key does not start with %q", c4ghMagic)
	}
	kdfName, rest, ok := string16(rest)
	if !ok {
		return SecretKeyInfo{}, malformed("crypt4gh secret key: truncated kdf name")
	}
	kdf := KDF(kdfName)
	switch kdf {
	case KDFScrypt, KDFBcrypt, KDFPBKDF2, KDFNone:
	default:
		return SecretKeyInfo{}, fmt.Errorf("%w: crypt4gh secret key: unknown kdf %q", ErrUnsupportedKey, printable(kdfName))
	}
	if kdf != KDFNone {
		if _, rest, ok = string16(rest); !ok {
			return SecretKeyInfo{}, malformed("crypt4gh secret key: truncated kdf options")
		}
	}
	_, rest, ok1 := string16(rest) // cipher name
	_, rest, ok2 := string16(rest) // key data
	if !ok1 || !ok2 {
		return SecretKeyInfo{}, malformed("crypt4gh secret key: truncated key data")
	}
	info := SecretKeyInfo{Format: FormatCrypt4GH, Protected: kdf != KDFNone, KDF: kdf}
	if len(rest) > 0 {
		comment, rest, ok := string16(rest)
		if !ok || len(rest) > 0 {
			return SecretKeyInfo{}, malformed("crypt4gh secret key: bad comment")
		}
		info.Comment = string(comment)
	}
	return info, nil
}

// inspectOpenSSH reads the clear header of an openssh-key-v1 file and, when
// the key is not encrypted, the comment in its private section.
func inspectOpenSSH(blob []byte) (SecretKeyInfo, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(sshMagic))
	if !ok {
		return SecretKeyInfo{}, malformed("OpenSSH private key does not start with %q", "openssh-key-v1")
	}
	cipherName, rest, ok1 := string32(rest)
	_, rest, ok2 := string32(rest) // kdf name
	_, rest, ok3 := string32(rest) // kdf options
	nKeys, rest, ok4 := uint32BE(rest)
	pubBlob, rest, ok5 := string32(rest)
	section, _, ok6 := string32(rest)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return SecretKeyInfo{}, malformed("OpenSSH private key: truncated header")
	}
	if nKeys != 1 {
		return SecretKeyInfo{}, fmt.Errorf("%w: OpenSSH private key file with %d keys", ErrUnsupportedKey, nKeys)
	}
	keyType, _, ok := string32(pubBlob)
	if !ok {
		return SecretKeyInfo{}, malformed("OpenSSH private key: truncated key type")
	}
	if string(keyType) != sshEd25519 {
		return SecretKeyInfo{}, fmt.Errorf("%w: OpenSSH key type %q", ErrUnsupportedKey, printable(keyType))
	}
	if string(cipherName) != "none" {
		return SecretKeyInfo{Format: FormatOpenSSH, Protected: true, KDF: KDFBcrypt}, nil
	}
	info := SecretKeyInfo{Format: FormatOpenSSH, KDF: KDFNone}
	// checkint ×2, key type, public key, private key, comment.
	if len(section) < 8 {
		return SecretKeyInfo{}, malformed("OpenSSH private key: truncated private section")
	}
	p := section[8:]
	var comment []byte
	for i := 0; i < 4; i++ {
		if comment, p, ok = string32(p); !ok {
			return SecretKeyInfo{}, malformed("OpenSSH private key: truncated private section")
		}
	}
	info.Comment = string(comment)
	return info, nil
}
