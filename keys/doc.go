// Package keys reads and writes the key files of Crypt4GH and holds the
// X25519 key types that the header packets use.
//
// # Keys
//
// A [SecretKey] is an X25519 scalar and a [PublicKey] the matching
// Montgomery u-coordinate. [Generate] makes a new secret key;
// [ReaderSharedKey] and [WriterSharedKey] compute the key of a header packet
// (libsodium's crypto_kx, as Crypt4GH specifies it). An [Opener] opens the
// header packets of a reader: a *SecretKey is one, a key agent's client
// (package agent) another, that never holds the secret key.
//
// # Key files
//
// [ParsePublicKey] and [ParseSecretKey] accept every format that the other
// Crypt4GH tools write:
//
//   - crypt4gh keys (crypt4gh Python, neicnordic/crypt4gh), secret keys
//     protected with scrypt, bcrypt_pbkdf or PBKDF2-HMAC-SHA256 and
//     ChaCha20-Poly1305, or unprotected;
//   - OpenSSH ed25519 keys: "ssh-ed25519 AAAA…" lines and "OPENSSH PRIVATE
//     KEY" files, unencrypted or encrypted, converted to X25519 as
//     libsodium does ([Ed25519SecretToX25519], [Ed25519PublicToX25519]);
//   - X25519 keys as PKCS#8 "PRIVATE KEY" and PKIX "PUBLIC KEY" PEM, and
//     as "ENCRYPTED PRIVATE KEY" PEM protected with PBES2 (PBKDF2 or
//     scrypt, AES-CBC), as openssl writes them;
//   - bare keys: the 32 bytes of a secret key under "CRYPT4GH PRIVATE KEY",
//     as samtools' htslib-crypt4gh plug-in and its agent write them.
//
// A secret key is recognised by what its PEM armor holds, not by the
// label: "c4gh-v1" inside is a crypt4gh key and "openssh-key-v1" an
// OpenSSH key under any label (the crypt4gh Python package's own test
// keys are crypt4gh keys labelled "ENCRYPTED PRIVATE KEY").
//
// [ParsePublicKeys] reads a list of recipients: a file of several public
// keys, such as "cat alice.pub bob.pub > team.pub" makes, or several
// "ssh-ed25519" lines, with # comments and blank lines between them, as
// age reads a recipients file. Anything else in it is an error naming its
// line. [ParsePublicKey] wants a file of exactly one key and refuses a
// list with [ErrMultipleKeys] rather than take one of its keys.
//
// [MarshalPublicKey] and [MarshalSecretKey] write the crypt4gh format,
// byte for byte as crypt4gh 1.8.6 does (base64 on one line, scrypt rounds
// field 0, 16-byte salt).
//
// # Errors
//
// Errors wrap one of [ErrWrongPassphrase], [ErrMalformedKey],
// [ErrUnsupportedKey], [ErrPassphraseRequired] and [ErrMultipleKeys]; test
// for them with [errors.Is]. The parsers never panic on their input and
// never return an all-zero key without an error.
//
// # Passphrases
//
// [ParseSecretKey] takes a function that it calls only when the key is
// protected (the crypt4gh command asks on the terminal). Derived keys and
// decrypted buffers are cleared after use where Go allows it (the Blowfish
// and scrypt states inside x/crypto, and the string that crypto/pbkdf2
// takes, cannot be cleared).
//
// # KDFs
//
// OpenSSH's bcrypt_pbkdf, written on golang.org/x/crypto/blowfish, serves
// both OpenSSH keys and crypt4gh keys with the "bcrypt" KDF.
package keys
