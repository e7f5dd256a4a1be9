package cli

import (
	"github.com/c4gh-go/crypt4gh/internal/keyfile"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The keys of a command, read through internal/keyfile with the run's
// stdin, warnings and -q.

// The variables that the other Crypt4GH tools read.
const (
	passphraseEnv    = keyfile.PassphraseEnv
	newPassphraseEnv = keyfile.NewPassphraseEnv
	secretKeyEnv     = keyfile.SecretKeyEnv
	publicKeyEnv     = keyfile.PublicKeyEnv
)

// keyLoader reads the keys and passphrases of the run of e.
func (e *env) keyLoader() *keyfile.Loader {
	return &keyfile.Loader{Stdin: e.stdin, Warn: e.warnf, Quiet: e.quiet}
}

// expandHome turns a leading "~" of a path into the home folder.
func expandHome(path string) string { return keyfile.ExpandHome(path) }

// secretKeyPath is the --sk of a command, or C4GH_SECRET_KEY.
func (k keyOptions) secretKeyPath() string { return expandHome(k.SK) }

// loadSecretKey reads the secret key named by --sk, asking for its
// passphrase only when it is protected, and describes its file.
func loadSecretKey(e *env, k keyOptions) (*keys.SecretKey, keys.SecretKeyInfo, error) {
	path := k.secretKeyPath()
	if path == "" {
		return nil, keys.SecretKeyInfo{}, usagef("no secret key: use --sk PATH or set %s", secretKeyEnv)
	}
	return e.keyLoader().SecretKey(path, k.PassphraseFile)
}

// readSecretKey is loadSecretKey for the commands that need only the key.
func readSecretKey(e *env, k keyOptions) (*keys.SecretKey, error) {
	sk, _, err := loadSecretKey(e, k)
	return sk, err
}

// readReaderKeys loads the secret key of --sk and, when --sender_pk is
// given, the public key that every accepted packet must be written by.
func readReaderKeys(e *env, k keyOptions) (*keys.SecretKey, *keys.PublicKey, error) {
	var sender *keys.PublicKey
	if p := k.Sender; p != "" {
		pks, err := readPublicKeys([]string{p})
		if err != nil {
			return nil, nil, err
		}
		if len(pks) != 1 {
			return nil, nil, usagef("--sender_pk %s holds %d keys; give the one writer", quoteName(p), len(pks))
		}
		sender = &pks[0]
	}
	sk, err := readSecretKey(e, k)
	if err != nil {
		return nil, nil, err
	}
	return sk, sender, nil
}

// readPublicKeys loads every key of every public key file in paths.
func readPublicKeys(paths []string) ([]keys.PublicKey, error) { return keyfile.ReadPublicKeys(paths) }

// warnReadable warns when others may read the file at path, which holds
// a secret (what names it).
func (e *env) warnReadable(what, path string) { e.keyLoader().WarnReadable(what, path) }
