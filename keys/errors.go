package keys

import "github.com/c4gh-go/crypt4gh/internal/errkind"

// Errors returned by the key parsers. They are wrapped with details (the
// name of an unsupported KDF, the field that is truncated, …); test for them
// with [errors.Is].
var (
	// ErrWrongPassphrase means that a protected secret key did not decrypt:
	// the MAC failed (crypt4gh keys, OpenSSH keys with an AEAD cipher) or
	// the check integers differ (OpenSSH keys with a CTR or CBC cipher), or
	// the CBC padding or the decrypted DER is wrong (encrypted PKCS#8 keys).
	ErrWrongPassphrase = errkind.New(errkind.Key, "wrong passphrase")

	// ErrMalformedKey means that the data is damaged or truncated, or is not
	// a key file at all.
	ErrMalformedKey = errkind.New(errkind.Key, "malformed key")

	// ErrUnsupportedKey means that the key file is well formed but uses a
	// key type, KDF or cipher that this package does not implement. The
	// wrapping error names it.
	ErrUnsupportedKey = errkind.New(errkind.Key, "unsupported key")

	// ErrPassphraseRequired is returned by [ParseSecretKey] when the key is
	// protected and no passphrase function was given, and by
	// [MarshalSecretKey] when a KDF is asked for with an empty passphrase.
	ErrPassphraseRequired = errkind.New(errkind.Key, "passphrase required")

	// ErrMultipleKeys is returned by [ParsePublicKey] for a file of
	// several public keys, which is a list of recipients: read it with
	// [ParsePublicKeys].
	ErrMultipleKeys = errkind.New(errkind.Key, "several public keys where one is expected")
)
