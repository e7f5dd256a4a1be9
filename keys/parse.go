package keys

import (
	"bytes"
	"crypto/ecdh"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
)

// PEM types of the PKCS#8 and PKIX key files.
const (
	pemPKCS8          = "PRIVATE KEY"
	pemEncryptedPKCS8 = "ENCRYPTED PRIVATE KEY"
	pemPKIX           = "PUBLIC KEY"
	pemOpenSSH        = "OPENSSH PRIVATE KEY"
)

// ParsePublicKey reads a public key file that holds one key, in any of
// these formats:
//
//   - crypt4gh: PEM armor "CRYPT4GH PUBLIC KEY" around the 32-byte key;
//   - OpenSSH: an "ssh-ed25519 AAAA… comment" line, converted to X25519 with
//     [Ed25519PublicToX25519];
//   - PKIX: PEM "PUBLIC KEY" holding an X25519 key (OID 1.3.101.110).
//
// The file is read as [ParsePublicKeys] reads it, and must hold exactly one
// key: a file of several keys (a list of recipients) gives
// [ErrMultipleKeys] rather than one of them. Blank lines and lines that
// start with # may surround the key; any other text is an error.
//
// A key of another type (ssh-rsa, an RSA PKIX key, a secret key file, …)
// gives an error wrapping [ErrUnsupportedKey] that names it; damaged input
// gives [ErrMalformedKey]. The all-zero key is refused. Errors name the
// line where the key at fault starts ("line 3: …").
func ParsePublicKey(data []byte) (PublicKey, error) {
	pks, err := ParsePublicKeys(data)
	if err != nil {
		return PublicKey{}, err
	}
	if len(pks) != 1 {
		return PublicKey{}, fmt.Errorf("%w: the file holds %d; a file of several keys is a list of recipients", ErrMultipleKeys, len(pks))
	}
	return pks[0], nil
}

// ParsePublicKeys reads a file of one or more public keys, such as a list
// of recipients made with "cat alice.pub bob.pub > team.pub" or a file of
// "ssh-ed25519 …" lines, and returns every key in the order of the file
// (a key that appears twice is returned twice). Each key is in one of the
// formats of [ParsePublicKey]; between keys there may be blank lines and
// lines that start with # (comments).
//
// Anything else is an error that names its line ("line 7: …") and wraps
// [ErrMalformedKey] (text that is not a key, damaged PEM armor) or
// [ErrUnsupportedKey] (a key of another type, a secret key): no key is
// returned then, not even the ones before it. A file without any key gives
// [ErrMalformedKey].
func ParsePublicKeys(data []byte) ([]PublicKey, error) {
	data = withoutBOM(data)
	var pks []PublicKey
	for lineNo, rest := 0, data; len(rest) > 0; {
		start := rest
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		first := lineNo
		var pk PublicKey
		var err error
		if bytes.HasPrefix(line, []byte("-----BEGIN ")) {
			// The armor runs to the first END line; pem.Decode checks
			// that it matches.
			var n int
			if n, err = pemEnd(start); err == nil {
				pk, err = parsePublicArmor(start[:len(start)-len(rest)+n])
				lineNo += bytes.Count(rest[:n], []byte("\n"))
				rest = rest[n:]
			}
		} else {
			pk, err = parseSSHPublicLine(line)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", first, err)
		}
		pks = append(pks, pk)
	}
	if len(pks) == 0 {
		return nil, malformed("no public key found")
	}
	return pks, nil
}

// pemEnd returns the length of the lines of armor that follow the first
// line of armor, up to and including the first line that starts with
// "-----END".
func pemEnd(armor []byte) (int, error) {
	_, rest, _ := bytes.Cut(armor, []byte("\n"))
	for n := 0; n < len(rest); {
		line, _, found := bytes.Cut(rest[n:], []byte("\n"))
		n += len(line)
		if found {
			n++
		}
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("-----END")) {
			return n, nil
		}
	}
	return 0, malformed("PEM armor without an END line")
}

// parsePublicArmor reads the one PEM block that armor holds.
func parsePublicArmor(armor []byte) (PublicKey, error) {
	block, rest := pem.Decode(armor)
	if block == nil || len(bytes.TrimSpace(rest)) != 0 {
		return PublicKey{}, malformed("damaged PEM armor")
	}
	return parsePublicPEM(block)
}

// parsePublicPEM reads a public key from a PEM block. A block that holds a
// secret key, by its label or its bytes, is an error that says so (a
// crypt4gh public key is 32 bytes and could start with "c4gh-v1" only by
// chance, so it is read first).
func parsePublicPEM(block *pem.Block) (PublicKey, error) {
	var pk PublicKey
	switch {
	case block.Type == pemC4GHPublic && len(block.Bytes) == KeySize:
		copy(pk[:], block.Bytes)
	case bytes.HasPrefix(block.Bytes, []byte(c4ghMagic)), bytes.HasPrefix(block.Bytes, []byte(sshMagic)),
		block.Type == pemC4GHPrivate, block.Type == pemC4GHEncryptedPrivate, block.Type == pemOpenSSH,
		block.Type == pemPKCS8, block.Type == pemEncryptedPKCS8:
		clear(block.Bytes)
		return PublicKey{}, fmt.Errorf("%w: %q holds a secret key, not a public key", ErrUnsupportedKey, printable([]byte(block.Type)))
	case block.Type == pemC4GHPublic:
		return PublicKey{}, malformed("crypt4gh public key of %d bytes, want %d", len(block.Bytes), KeySize)
	case block.Type == pemPKIX:
		var err error
		if pk, err = parsePKIXPublic(block.Bytes); err != nil {
			return PublicKey{}, err
		}
	default:
		return PublicKey{}, foreignPEM(block)
	}
	if pk == (PublicKey{}) {
		return PublicKey{}, malformed("public key is all zeros")
	}
	return pk, nil
}

// ParseSecretKey reads a secret key file in any of these formats:
//
//   - crypt4gh: "c4gh-v1" inside the PEM armor, with any of the KDFs
//     [KDFScrypt], [KDFBcrypt], [KDFPBKDF2] and [KDFNone];
//   - OpenSSH: "openssh-key-v1" inside the PEM armor, holding one ed25519
//     key, unencrypted or encrypted with bcrypt_pbkdf and
//     aes{128,192,256}-{ctr,cbc}, aes{128,256}-gcm@openssh.com or
//     chacha20-poly1305@openssh.com, converted to X25519 with
//     [Ed25519SecretToX25519];
//   - PKCS#8: PEM "PRIVATE KEY" holding an X25519 key (OID 1.3.101.110), or
//     PEM "ENCRYPTED PRIVATE KEY" holding one encrypted with PBES2 (see
//     below);
//   - bare: PEM "CRYPT4GH PRIVATE KEY" holding only the 32 bytes of the
//     key, never protected, as samtools' htslib-crypt4gh plug-in and its
//     agent write it.
//
// Keys are told apart by what the armor holds, not by its label: crypt4gh
// 1.8.6 writes "CRYPT4GH PRIVATE KEY", neicnordic/crypt4gh "CRYPT4GH
// ENCRYPTED PRIVATE KEY", and the test keys of the crypt4gh Python
// package, which other projects copy, are crypt4gh keys labelled
// "ENCRYPTED PRIVATE KEY"; all of them are read as crypt4gh keys, and an
// OpenSSH key is read as such under any label too.
//
// An encrypted PKCS#8 key (as "openssl genpkey -algorithm X25519
// -aes-256-cbc" or "openssl pkcs8 -topk8 [-scrypt]" write it) must use
// PBES2 with PBKDF2 (HMAC-SHA1, -SHA224, -SHA256, -SHA384 or -SHA512) or
// scrypt, and AES-128-CBC, AES-192-CBC or AES-256-CBC. So that a hostile
// file cannot make the parser work for minutes or allocate gigabytes,
// PBKDF2 may have at most 2^24 iterations (8192 times the 2048 that
// openssl writes), and scrypt at most N·r = 2^21 (256 MiB of memory, 16
// times openssl's N=2^14, r=8) and N·r·p = 2^24 (128 times openssl's
// work); beyond that the key gives [ErrUnsupportedKey]
// (BenchmarkEncryptedPKCS8 times openssl's settings). PBES1, PKCS#12 PBE
// and other ciphers give [ErrUnsupportedKey] with their name.
//
// passphrase is called at most once, and only for a protected key, after
// the structure of the file has been checked; when it is nil, a protected
// key gives [ErrPassphraseRequired]. ParseSecretKey does not modify or keep
// the passphrase. A passphrase that does not decrypt the key gives
// [ErrWrongPassphrase] (for an encrypted PKCS#8 key: the CBC padding or
// the decrypted DER is wrong); damaged input gives [ErrMalformedKey]; a key
// type, KDF or cipher this package does not implement gives
// [ErrUnsupportedKey] with its name. The all-zero key is refused.
//
// The caller should call [SecretKey.Zero] on the result when done with it.
func ParseSecretKey(data []byte, passphrase func() ([]byte, error)) (SecretKey, error) {
	kind, der, err := decodeSecretPEM(data)
	if err != nil {
		return SecretKey{}, err
	}
	defer clear(der)
	switch kind {
	case secretC4GH:
		return parseC4GHSecret(der, passphrase)
	case secretOpenSSH:
		return parseOpenSSHSecret(der, passphrase)
	case secretEncryptedPKCS8:
		return parseEncryptedPKCS8(der, passphrase)
	case secretBare:
		return parseBareSecret(der)
	}
	return parsePKCS8Secret(der) // secretPKCS8
}

// secretKind is what a secret key file holds, as decodeSecretPEM tells it.
type secretKind int

const (
	secretC4GH secretKind = iota
	secretOpenSSH
	secretPKCS8
	secretEncryptedPKCS8
	secretBare
)

// foreignPEMTypes describes the PEM armors, other than the key files of
// this package, that one is likely to be handed for a key.
var foreignPEMTypes = map[string]string{
	"RSA PRIVATE KEY":       "an RSA private key, PKCS#1",
	"EC PRIVATE KEY":        "an EC private key, SEC 1",
	"DSA PRIVATE KEY":       "a DSA private key",
	"RSA PUBLIC KEY":        "an RSA public key, PKCS#1",
	"CERTIFICATE":           "an X.509 certificate",
	"PGP PRIVATE KEY BLOCK": "an OpenPGP private key",
	"PGP PUBLIC KEY BLOCK":  "an OpenPGP public key",
}

// decodeSecretPEM finds the PEM armor of a secret key file and returns
// what it holds and the bytes inside, which the caller should clear when
// done. The bytes decide first: "c4gh-v1" starts a crypt4gh key and
// "openssh-key-v1\0" an OpenSSH key, whatever the label; otherwise the
// label does. An armor of another type is an error.
func decodeSecretPEM(data []byte) (secretKind, []byte, error) {
	// A byte-order mark or spaces before the armor (an editor's) hide
	// it from pem.Decode, which wants it at the start of a line.
	block, rest := pem.Decode(bytes.TrimLeft(withoutBOM(data), " \t\r\n"))
	if block != nil && strings.Contains(block.Type, "PRIVATE KEY") {
		if next, _ := pem.Decode(rest); next != nil && strings.Contains(next.Type, "PRIVATE KEY") {
			clear(block.Bytes)
			clear(next.Bytes)
			return 0, nil, malformed("the file holds more than one secret key (a %s after the %s)", printable([]byte(next.Type)), printable([]byte(block.Type)))
		}
	}
	if block == nil {
		if bytes.Contains(data, []byte("-----BEGIN")) {
			return 0, nil, malformed("damaged PEM armor")
		}
		if _, err := parseSSHPublicLine(bytes.TrimSpace(data)); err == nil {
			return 0, nil, malformed("an OpenSSH public key, not a secret key")
		}
		return 0, nil, malformed("no PEM armored secret key found")
	}
	switch {
	case bytes.HasPrefix(block.Bytes, []byte(c4ghMagic)):
		return secretC4GH, block.Bytes, nil
	case bytes.HasPrefix(block.Bytes, []byte(sshMagic)):
		return secretOpenSSH, block.Bytes, nil
	}
	switch block.Type {
	case pemC4GHPrivate:
		if len(block.Bytes) == KeySize {
			return secretBare, block.Bytes, nil
		}
		return secretC4GH, block.Bytes, nil // without the magic: the parser says so
	case pemC4GHEncryptedPrivate:
		return secretC4GH, block.Bytes, nil
	case pemOpenSSH:
		return secretOpenSSH, block.Bytes, nil
	case pemPKCS8:
		return secretPKCS8, block.Bytes, nil
	case pemEncryptedPKCS8:
		return secretEncryptedPKCS8, block.Bytes, nil
	}
	clear(block.Bytes)
	if block.Type == pemC4GHPublic || block.Type == pemPKIX {
		return 0, nil, fmt.Errorf("%w: %q holds a public key, not a secret key", ErrUnsupportedKey, block.Type)
	}
	return 0, nil, foreignPEM(block)
}

// foreignPEM is the error for a PEM block of a type that this package
// does not read. It names what the block holds when the type is a common
// one.
func foreignPEM(block *pem.Block) error {
	what := fmt.Sprintf("PEM type %q", printable([]byte(block.Type)))
	if d, ok := foreignPEMTypes[block.Type]; ok {
		what += " (" + d + ")"
	}
	if block.Headers["Proc-Type"] != "" {
		// "Proc-Type: 4,ENCRYPTED" and DEK-Info, as openssl -traditional writes.
		what += " with OpenSSL's traditional PEM encryption"
	}
	return fmt.Errorf("%w: %s", ErrUnsupportedKey, what)
}

// parseSSHPublicLine reads a line of an OpenSSH public key file
// ("type base64 comment"), without its line break.
func parseSSHPublicLine(line []byte) (PublicKey, error) {
	fields := bytes.Fields(line)
	if len(fields) < 2 || !looksLikeSSHKeyType(fields[0]) {
		return PublicKey{}, malformed("not a public key (neither PEM armor nor an OpenSSH key line)")
	}
	blob := make([]byte, base64.StdEncoding.DecodedLen(len(fields[1])))
	n, err := base64.StdEncoding.Decode(blob, fields[1])
	if err != nil {
		return PublicKey{}, malformed("OpenSSH public key: bad base64")
	}
	return parseSSHPublicBlob(blob[:n])
}

// looksLikeSSHKeyType reports whether typ could start an OpenSSH public
// key line: ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, sk-ssh-ed25519@…
// The key type that counts is the one inside the base64 blob.
func looksLikeSSHKeyType(typ []byte) bool {
	for _, p := range []string{"ssh-", "ecdsa-", "sk-"} {
		if bytes.HasPrefix(typ, []byte(p)) {
			return true
		}
	}
	return false
}

// parseSSHPublicBlob reads the wire form of an OpenSSH public key:
// string type, then for ssh-ed25519 string key (32 bytes).
func parseSSHPublicBlob(blob []byte) (PublicKey, error) {
	typ, rest, ok := string32(blob)
	if !ok {
		return PublicKey{}, malformed("OpenSSH public key: truncated key type")
	}
	if string(typ) != sshEd25519 {
		return PublicKey{}, fmt.Errorf("%w: OpenSSH key type %q", ErrUnsupportedKey, printable(typ))
	}
	key, rest, ok := string32(rest)
	if !ok || len(key) != 32 || len(rest) != 0 {
		return PublicKey{}, malformed("OpenSSH ed25519 public key of the wrong length")
	}
	return Ed25519PublicToX25519(key)
}

// withoutBOM returns data without the UTF-8 byte-order mark that some
// editors put at the start of a text file.
func withoutBOM(data []byte) []byte { return bytes.TrimPrefix(data, []byte("\uFEFF")) }

// printable keeps a name read from a file short and free of control
// characters before it goes into an error message.
func printable(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return string(bytes.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, b))
}

var oidX25519 = asn1.ObjectIdentifier{1, 3, 101, 110}

// oidNames names the algorithms one is likely to meet in PKIX and PKCS#8
// files, for the unsupported-key error.
var oidNames = map[string]string{
	"1.2.840.113549.1.1.1": "RSA",
	"1.2.840.10045.2.1":    "ECDSA",
	"1.2.840.10040.4.1":    "DSA",
	"1.3.101.110":          "X25519",
	"1.3.101.111":          "X448",
	"1.3.101.112":          "Ed25519",
	"1.3.101.113":          "Ed448",
}

func oidName(oid asn1.ObjectIdentifier) string {
	if n, ok := oidNames[oid.String()]; ok {
		return n + " (" + oid.String() + ")"
	}
	return oid.String()
}

// parsePKIXPublic reads a DER SubjectPublicKeyInfo holding an X25519 key.
func parsePKIXPublic(der []byte) (PublicKey, error) {
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(der, &spki); err != nil || len(rest) != 0 {
		return PublicKey{}, malformed("PKIX public key: bad DER")
	}
	if !spki.Algorithm.Algorithm.Equal(oidX25519) {
		return PublicKey{}, fmt.Errorf("%w: PKIX public key of type %s, want X25519", ErrUnsupportedKey, oidName(spki.Algorithm.Algorithm))
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return PublicKey{}, malformed("PKIX X25519 public key: %v", err)
	}
	ek, ok := key.(*ecdh.PublicKey)
	if !ok || ek.Curve() != ecdh.X25519() {
		return PublicKey{}, fmt.Errorf("%w: PKIX public key of type %T", ErrUnsupportedKey, key)
	}
	var pk PublicKey
	copy(pk[:], ek.Bytes())
	return pk, nil
}

// pkcs8Info is the start of a PKCS#8 PrivateKeyInfo (RFC 5958
// OneAsymmetricKey); the optional attributes and public key that may
// follow are not needed here.
type pkcs8Info struct {
	Version    int
	Algorithm  pkix.AlgorithmIdentifier
	PrivateKey []byte
}

// parsePKCS8Secret reads a DER PKCS#8 PrivateKeyInfo holding an X25519 key.
func parsePKCS8Secret(der []byte) (SecretKey, error) {
	var info pkcs8Info
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return SecretKey{}, malformed("PKCS#8 private key: bad DER")
	}
	defer clear(info.PrivateKey)
	if !info.Algorithm.Algorithm.Equal(oidX25519) {
		return SecretKey{}, fmt.Errorf("%w: PKCS#8 private key of type %s, want X25519", ErrUnsupportedKey, oidName(info.Algorithm.Algorithm))
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return SecretKey{}, malformed("PKCS#8 X25519 private key: %v", err)
	}
	ek, ok := key.(*ecdh.PrivateKey)
	if !ok || ek.Curve() != ecdh.X25519() {
		return SecretKey{}, fmt.Errorf("%w: PKCS#8 private key of type %T", ErrUnsupportedKey, key)
	}
	var sk SecretKey
	b := ek.Bytes()
	copy(sk[:], b)
	clear(b)
	if sk == (SecretKey{}) {
		return SecretKey{}, malformed("PKCS#8 X25519 private key is all zeros")
	}
	return sk, nil
}

// parseBareSecret reads the 32 bytes of a bare key, as htslib-crypt4gh
// writes it. The all-zero key is refused, as for every format.
func parseBareSecret(b []byte) (SecretKey, error) {
	var sk SecretKey
	copy(sk[:], b)
	if sk == (SecretKey{}) {
		return SecretKey{}, malformed("the key is all zeros")
	}
	return sk, nil
}
