package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"hash"
)

// Limits on the KDF parameters of an encrypted PKCS#8 key, so that a
// hostile file cannot make the parser work for minutes or allocate
// gigabytes. openssl writes 2048 PBKDF2 iterations, or scrypt with N=2^14,
// r=8, p=1. ParseSecretKey documents them.
const (
	maxPKCS8Iterations = 1 << 24 // 8192 times openssl's 2048
	maxScryptNr        = 1 << 21 // memory: 128·N·r bytes, 256 MiB, 16 times openssl's
	maxScryptNrp       = 1 << 24 // work: 128 times openssl's
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidScrypt = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}
)

// pkcs8PRFs are the PRFs of PBKDF2 that PBES2 keys may use, by OID
// (RFC 8018, appendix B.1). The default, when the parameters name none, is
// HMAC-SHA1.
var pkcs8PRFs = map[string]struct {
	name string
	hash func() hash.Hash
}{
	"1.2.840.113549.2.7":  {"HMAC-SHA1", sha1.New},
	"1.2.840.113549.2.8":  {"HMAC-SHA224", sha256.New224},
	"1.2.840.113549.2.9":  {"HMAC-SHA256", sha256.New},
	"1.2.840.113549.2.10": {"HMAC-SHA384", sha512.New384},
	"1.2.840.113549.2.11": {"HMAC-SHA512", sha512.New},
}

// pkcs8Ciphers are the encryption schemes of PBES2 that this package
// implements, by OID, with their key sizes.
var pkcs8Ciphers = map[string]struct {
	name   string
	keyLen int
}{
	"2.16.840.1.101.3.4.1.2":  {"AES-128-CBC", 16},
	"2.16.840.1.101.3.4.1.22": {"AES-192-CBC", 24},
	"2.16.840.1.101.3.4.1.42": {"AES-256-CBC", 32},
}

// pkcs8OIDNames names the algorithms of encrypted PKCS#8 files that this
// package does not implement, for the unsupported-key error.
var pkcs8OIDNames = map[string]string{
	"1.2.840.113549.1.5.1":      "PBES1 pbeWithMD2AndDES-CBC",
	"1.2.840.113549.1.5.3":      "PBES1 pbeWithMD5AndDES-CBC",
	"1.2.840.113549.1.5.4":      "PBES1 pbeWithMD2AndRC2-CBC",
	"1.2.840.113549.1.5.6":      "PBES1 pbeWithMD5AndRC2-CBC",
	"1.2.840.113549.1.5.10":     "PBES1 pbeWithSHA1AndDES-CBC",
	"1.2.840.113549.1.5.11":     "PBES1 pbeWithSHA1AndRC2-CBC",
	"1.2.840.113549.1.12.1.1":   "PKCS#12 pbeWithSHAAnd128BitRC4",
	"1.2.840.113549.1.12.1.2":   "PKCS#12 pbeWithSHAAnd40BitRC4",
	"1.2.840.113549.1.12.1.3":   "PKCS#12 pbeWithSHAAnd3-KeyTripleDES-CBC",
	"1.2.840.113549.1.12.1.4":   "PKCS#12 pbeWithSHAAnd2-KeyTripleDES-CBC",
	"1.2.840.113549.1.12.1.5":   "PKCS#12 pbeWithSHAAnd128BitRC2-CBC",
	"1.2.840.113549.1.12.1.6":   "PKCS#12 pbewithSHAAnd40BitRC2-CBC",
	"1.2.840.113549.3.7":        "DES-EDE3-CBC",
	"1.3.14.3.2.7":              "DES-CBC",
	"1.2.840.113549.3.2":        "RC2-CBC",
	"2.16.840.1.101.3.4.1.6":    "AES-128-GCM",
	"2.16.840.1.101.3.4.1.26":   "AES-192-GCM",
	"2.16.840.1.101.3.4.1.46":   "AES-256-GCM",
	"1.2.840.113549.2.5":        "HMAC-MD5",
	"1.2.840.113549.2.13":       "HMAC-SHA512/224",
	"1.2.840.113549.2.12":       "HMAC-SHA512/256",
	"1.2.156.10197.1.104.2":     "SM4-CBC",
	"1.2.392.200011.61.1.1.1.2": "Camellia-128-CBC",
	"1.2.392.200011.61.1.1.1.3": "Camellia-192-CBC",
	"1.2.392.200011.61.1.1.1.4": "Camellia-256-CBC",
}

func pkcs8OIDName(oid asn1.ObjectIdentifier) string {
	if n, ok := pkcs8OIDNames[oid.String()]; ok {
		return n + " (" + oid.String() + ")"
	}
	return oid.String()
}

// pkcs8Encrypted holds an EncryptedPrivateKeyInfo with PBES2 as
// decodeEncryptedPKCS8 checks it. The slices alias the decoded bytes.
type pkcs8Encrypted struct {
	kdf        KDF // KDFPBKDF2 (whatever the PRF) or KDFScrypt
	salt       []byte
	iterations int              // PBKDF2
	prf        func() hash.Hash // PBKDF2
	n, r, p    int              // scrypt
	keyLen     int
	iv         []byte
	ciphertext []byte
}

// decodeEncryptedPKCS8 splits der, the bytes inside an ENCRYPTED PRIVATE
// KEY armor (RFC 5958 EncryptedPrivateKeyInfo, RFC 8018 PBES2, RFC 7914
// scrypt):
//
//	SEQUENCE { AlgorithmIdentifier { PBES2, SEQUENCE {
//	    AlgorithmIdentifier { PBKDF2, SEQUENCE { OCTET STRING salt,
//	        INTEGER iterations, [INTEGER keyLength], [AlgorithmIdentifier prf] } }
//	      or { scrypt, SEQUENCE { OCTET STRING salt, INTEGER N, INTEGER r,
//	        INTEGER p, [INTEGER keyLength] } },
//	    AlgorithmIdentifier { aes-CBC, OCTET STRING iv } } },
//	  OCTET STRING encryptedData }
//
// It checks every parameter and the limits, so that the passphrase is
// asked for only when the key can be decrypted.
func decodeEncryptedPKCS8(der []byte) (pkcs8Encrypted, error) {
	var e pkcs8Encrypted
	var info struct {
		Algorithm     pkix.AlgorithmIdentifier
		EncryptedData []byte
	}
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return e, malformed("encrypted PKCS#8 private key: bad DER")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return e, fmt.Errorf("%w: encrypted PKCS#8 private key with %s, want PBES2",
			ErrUnsupportedKey, pkcs8OIDName(info.Algorithm.Algorithm))
	}
	var params struct {
		KDF, Cipher pkix.AlgorithmIdentifier
	}
	if rest, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil || len(rest) != 0 {
		return e, malformed("encrypted PKCS#8 private key: bad PBES2 parameters")
	}

	c, ok := pkcs8Ciphers[params.Cipher.Algorithm.String()]
	if !ok {
		return e, fmt.Errorf("%w: encrypted PKCS#8 private key: PBES2 cipher %s, want AES-CBC",
			ErrUnsupportedKey, pkcs8OIDName(params.Cipher.Algorithm))
	}
	e.keyLen = c.keyLen
	if rest, err := asn1.Unmarshal(params.Cipher.Parameters.FullBytes, &e.iv); err != nil || len(rest) != 0 || len(e.iv) != aes.BlockSize {
		return e, malformed("encrypted PKCS#8 private key: %s without a 16-byte IV", c.name)
	}
	e.ciphertext = info.EncryptedData
	if len(e.ciphertext) == 0 || len(e.ciphertext)%aes.BlockSize != 0 {
		return e, malformed("encrypted PKCS#8 private key: %d bytes of %s ciphertext", len(e.ciphertext), c.name)
	}

	var keyLen int
	var err error
	switch kdfParams := params.KDF.Parameters.FullBytes; {
	case params.KDF.Algorithm.Equal(oidPBKDF2):
		keyLen, err = e.decodePBKDF2(kdfParams)
	case params.KDF.Algorithm.Equal(oidScrypt):
		keyLen, err = e.decodeScrypt(kdfParams)
	default:
		err = fmt.Errorf("%w: encrypted PKCS#8 private key: PBES2 KDF %s, want PBKDF2 or scrypt",
			ErrUnsupportedKey, pkcs8OIDName(params.KDF.Algorithm))
	}
	if err != nil {
		return e, err
	}
	if keyLen != 0 && keyLen != e.keyLen {
		return e, malformed("encrypted PKCS#8 private key: KDF key length %d for %s", keyLen, c.name)
	}
	return e, nil
}

// decodePBKDF2 reads PBKDF2-params into e and returns the key length they
// state, 0 when they state none.
func (e *pkcs8Encrypted) decodePBKDF2(der []byte) (int, error) {
	var p struct {
		Salt       asn1.RawValue // CHOICE { OCTET STRING, AlgorithmIdentifier }
		Iterations int64
		KeyLength  int64                    `asn1:"optional"`
		PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
	}
	if rest, err := asn1.Unmarshal(der, &p); err != nil || len(rest) != 0 {
		return 0, malformed("encrypted PKCS#8 private key: bad PBKDF2 parameters")
	}
	if p.Salt.Class != asn1.ClassUniversal || p.Salt.Tag != asn1.TagOctetString || p.Salt.IsCompound {
		return 0, fmt.Errorf("%w: encrypted PKCS#8 private key: PBKDF2 salt that is not an OCTET STRING", ErrUnsupportedKey)
	}
	e.kdf, e.salt = KDFPBKDF2, p.Salt.Bytes
	prf := pkcs8PRFs["1.2.840.113549.2.7"] // the default, HMAC-SHA1
	if p.PRF.Algorithm != nil {
		var ok bool
		if prf, ok = pkcs8PRFs[p.PRF.Algorithm.String()]; !ok {
			return 0, fmt.Errorf("%w: encrypted PKCS#8 private key: PBKDF2 PRF %s", ErrUnsupportedKey, pkcs8OIDName(p.PRF.Algorithm))
		}
	}
	e.prf = prf.hash
	switch {
	case p.Iterations < 1:
		return 0, malformed("encrypted PKCS#8 private key: %d PBKDF2 iterations", p.Iterations)
	case p.Iterations > maxPKCS8Iterations:
		return 0, fmt.Errorf("%w: encrypted PKCS#8 private key: %d PBKDF2 iterations (limit %d)",
			ErrUnsupportedKey, p.Iterations, maxPKCS8Iterations)
	case p.KeyLength < 0 || p.KeyLength > 64:
		return 0, malformed("encrypted PKCS#8 private key: PBKDF2 key length %d", p.KeyLength)
	}
	e.iterations = int(p.Iterations)
	return int(p.KeyLength), nil
}

// decodeScrypt reads scrypt-params into e and returns the key length they
// state, 0 when they state none.
func (e *pkcs8Encrypted) decodeScrypt(der []byte) (int, error) {
	var p struct {
		Salt      []byte
		N, R, P   int64
		KeyLength int64 `asn1:"optional"`
	}
	if rest, err := asn1.Unmarshal(der, &p); err != nil || len(rest) != 0 {
		return 0, malformed("encrypted PKCS#8 private key: bad scrypt parameters")
	}
	e.kdf, e.salt = KDFScrypt, p.Salt
	switch {
	case p.N < 2 || p.N&(p.N-1) != 0 || p.R < 1 || p.P < 1:
		return 0, malformed("encrypted PKCS#8 private key: scrypt with N=%d, r=%d, p=%d", p.N, p.R, p.P)
	// The products cannot overflow: each factor is checked first.
	case p.N > maxScryptNr || p.R > maxScryptNr || p.P > maxScryptNrp ||
		p.N*p.R > maxScryptNr || p.N*p.R*p.P > maxScryptNrp:
		return 0, fmt.Errorf("%w: encrypted PKCS#8 private key: scrypt with N=%d, r=%d, p=%d (limits N·r ≤ %d, N·r·p ≤ %d)",
			ErrUnsupportedKey, p.N, p.R, p.P, maxScryptNr, maxScryptNrp)
	case p.KeyLength < 0 || p.KeyLength > 64:
		return 0, malformed("encrypted PKCS#8 private key: scrypt key length %d", p.KeyLength)
	}
	e.n, e.r, e.p = int(p.N), int(p.R), int(p.P)
	return int(p.KeyLength), nil
}

// deriveKey returns the AES key that the KDF of e derives from
// passphrase. The caller should clear it.
func (e *pkcs8Encrypted) deriveKey(passphrase []byte) ([]byte, error) {
	if e.kdf == KDFScrypt {
		return scryptKey(passphrase, e.salt, e.n, e.r, e.p, e.keyLen)
	}
	return pbkdf2.Key(e.prf, string(passphrase), e.salt, e.iterations, e.keyLen)
}

// parseEncryptedPKCS8 decodes the bytes inside an ENCRYPTED PRIVATE KEY
// armor and decrypts the PKCS#8 key inside.
//
// CBC has no MAC, so a wrong passphrase shows as garbage: padding that is
// not PKCS#7, or a PrivateKeyInfo that does not parse. Both are reported
// as [ErrWrongPassphrase]; a well-formed key of another type as
// [ErrUnsupportedKey].
func parseEncryptedPKCS8(der []byte, passphrase func() ([]byte, error)) (SecretKey, error) {
	e, err := decodeEncryptedPKCS8(der)
	if err != nil {
		return SecretKey{}, err
	}
	pass, err := getPassphrase(passphrase)
	if err != nil {
		return SecretKey{}, err
	}
	key, err := e.deriveKey(pass)
	if err != nil {
		return SecretKey{}, fmt.Errorf("failed to derive the key of an encrypted PKCS#8 private key: %w", err)
	}
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		panic("keys: internal error: " + err.Error())
	}
	plain := bytes.Clone(e.ciphertext)
	defer clear(plain)
	cipher.NewCBCDecrypter(block, e.iv).CryptBlocks(plain, plain)

	wrong := fmt.Errorf("failed to decrypt encrypted PKCS#8 private key: %w", ErrWrongPassphrase)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > aes.BlockSize {
		return SecretKey{}, wrong
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return SecretKey{}, wrong
		}
	}
	plain = plain[:len(plain)-pad]
	var info pkcs8Info
	if rest, err := asn1.Unmarshal(plain, &info); err != nil || len(rest) != 0 {
		clear(info.PrivateKey)
		return SecretKey{}, wrong
	}
	clear(info.PrivateKey)
	return parsePKCS8Secret(plain)
}
