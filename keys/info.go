package keys

// SecretKeyFormat names the format of a secret key file.
type SecretKeyFormat string

// The secret key formats that [ParseSecretKey] reads.
const (
	FormatCrypt4GH SecretKeyFormat = "crypt4gh" // "c4gh-v1" under any PEM label (CRYPT4GH PRIVATE KEY, ENCRYPTED PRIVATE KEY, …)
	FormatOpenSSH  SecretKeyFormat = "openssh"  // "openssh-key-v1" under any PEM label, ed25519
	FormatPKCS8    SecretKeyFormat = "pkcs8"    // PRIVATE KEY, or ENCRYPTED PRIVATE KEY with PBES2; X25519
	FormatBare     SecretKeyFormat = "bare"     // CRYPT4GH PRIVATE KEY holding only the 32 key bytes (htslib-crypt4gh)
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
	// the key is protected and [KDFNone] otherwise. For PKCS#8 keys it is
	// [KDFNone] when they are not encrypted, and for encrypted ones
	// [KDFPBKDF2] (with any of the PRFs that [ParseSecretKey] accepts, not
	// only HMAC-SHA256) or [KDFScrypt] (with the parameters in the file).
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
	kind, der, err := decodeSecretPEM(data)
	if err != nil {
		return SecretKeyInfo{}, err
	}
	defer clear(der)
	switch kind {
	case secretC4GH:
		return inspectC4GH(der)
	case secretOpenSSH:
		return inspectOpenSSH(der)
	case secretEncryptedPKCS8:
		e, err := decodeEncryptedPKCS8(der)
		if err != nil {
			return SecretKeyInfo{}, err
		}
		return SecretKeyInfo{Format: FormatPKCS8, Protected: true, KDF: e.kdf}, nil
	case secretBare:
		return SecretKeyInfo{Format: FormatBare, KDF: KDFNone}, nil
	}
	// secretPKCS8: a key in clear, no comment.
	return SecretKeyInfo{Format: FormatPKCS8, KDF: KDFNone}, nil
}

// inspectC4GH reads the clear fields of a crypt4gh secret key.
func inspectC4GH(blob []byte) (SecretKeyInfo, error) {
	f, err := decodeC4GHSecret(blob)
	if err != nil {
		return SecretKeyInfo{}, err
	}
	return SecretKeyInfo{
		Format:    FormatCrypt4GH,
		Protected: f.kdf != KDFNone,
		KDF:       f.kdf,
		Comment:   string(f.comment),
	}, nil
}

// inspectOpenSSH reads the clear header of an openssh-key-v1 file and, when
// the key is not encrypted, the comment in its private section.
func inspectOpenSSH(blob []byte) (SecretKeyInfo, error) {
	f, err := decodeOpenSSHSecret(blob)
	if err != nil {
		return SecretKeyInfo{}, err
	}
	if string(f.cipher) != "none" {
		return SecretKeyInfo{Format: FormatOpenSSH, Protected: true, KDF: KDFBcrypt}, nil
	}
	s, err := decodeSSHPrivateSection(f.section, false)
	if err != nil {
		return SecretKeyInfo{}, err
	}
	return SecretKeyInfo{Format: FormatOpenSSH, KDF: KDFNone, Comment: string(s.comment)}, nil
}
