package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/agent"
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
	if path == "" && os.Getenv(agent.SocketEnv) != "" {
		return nil, keys.SecretKeyInfo{}, withHint(usagef("no secret key: crypt4gh %s needs the secret key itself, which the agent of %s does not give out", e.command, agent.SocketEnv),
			"use --sk PATH or set %s", secretKeyEnv)
	}
	if path == "" {
		return nil, keys.SecretKeyInfo{}, noSecretKey()
	}
	return e.keyLoader().SecretKey(path, k.PassphraseFile)
}

// noSecretKey is the error of a command that needs a secret key and was
// given none. As the reference tool, no command reads keygen's default
// key unless it is named; when it is there, the hint names it.
func noSecretKey() error {
	err := usagef("no secret key: use --sk PATH or set %s", secretKeyEnv)
	if home, herr := os.UserHomeDir(); herr == nil {
		if _, serr := os.Stat(filepath.Join(home, defaultKeyDir, "key")); serr == nil {
			return withHint(err, "keygen's key pair is in ~/%s: --sk ~/%s/key", defaultKeyDir, defaultKeyDir)
		}
	}
	return err
}

// readerKey opens the headers of a command: the secret key of --sk, or the
// client of the agent of CRYPT4GH_AGENT. The caller must call Zero.
type readerKey interface {
	keys.Opener
	Zero()
}

// readReaderKey returns the secret key of --sk or, when no --sk (nor
// C4GH_SECRET_KEY) is given and CRYPT4GH_AGENT is set, the agent's client:
// for the commands that only open header packets. No key file is read then.
func readReaderKey(e *env, k keyOptions) (readerKey, error) {
	if k.secretKeyPath() == "" {
		c, err := agent.FromEnv()
		if err != nil {
			return nil, err
		}
		if c != nil {
			return c, nil
		}
	}
	sk, err := readSecretKey(e, k)
	if err != nil {
		return nil, err
	}
	return sk, nil
}

// readerPublic is the public key of a readerKey: of the secret key, or of
// the agent's key that its requests use.
func readerPublic(k readerKey) (keys.PublicKey, error) {
	switch k := k.(type) {
	case *agent.Client:
		return k.PublicKey()
	case keys.Writer:
		return k.Public(), nil
	}
	return keys.PublicKey{}, fmt.Errorf("no public key for a reader key of type %T", k)
}

// holderKey is the key of a command that writes header packets as the
// reader (reencrypt, rearrange, splice, serve): the secret key of --sk, or
// a key that the agent holds and seals with (and derives serve's key of
// data URLs with). The caller must call Zero.
type holderKey interface {
	keys.Holder
	Derive(label string) ([]byte, error)
	Zero()
}

// readHolderKey returns the secret key of --sk or, when no --sk (nor
// C4GH_SECRET_KEY) is given and CRYPT4GH_AGENT is set, the agent's key
// that CRYPT4GH_SECRET names, or its first: the agent then opens the
// packets and seals the new ones with that key as their writer, as the
// key itself would. No key file is read then.
func readHolderKey(e *env, k keyOptions) (holderKey, error) {
	if k.secretKeyPath() == "" {
		c, err := agent.FromEnv()
		if err != nil {
			return nil, err
		}
		if c != nil {
			key, err := c.Key()
			if err != nil {
				c.Close()
				return nil, err
			}
			return key, nil
		}
	}
	sk, err := readSecretKey(e, k)
	if err != nil {
		return nil, err
	}
	return sk, nil
}

// keyName names the reader's key of k in messages: "--sk PATH", or the
// agent's key.
func keyName(k keyOptions) string {
	if p := k.secretKeyPath(); p != "" {
		return "--sk " + quoteName(p)
	}
	return "the agent's key"
}

// preparedOpener is k made ready to open the headers of many files: a
// secret key with its public key computed once (keys.Reader), an agent's
// client as it is. A keys.Reader holds a copy of the key: the caller
// zeroes both (Zero), as it does k.
func preparedOpener(k readerKey) readerKey {
	if sk, ok := k.(*keys.SecretKey); ok {
		return keys.NewReader(sk)
	}
	return k
}

// readSecretKey is loadSecretKey for the commands that need only the key.
func readSecretKey(e *env, k keyOptions) (*keys.SecretKey, error) {
	sk, _, err := loadSecretKey(e, k)
	return sk, err
}

// readReaderKeys loads the key of --sk (or the agent, see readReaderKey)
// and, when --sender_pk is given, the public key that every accepted
// packet must be written by.
func readReaderKeys(e *env, k keyOptions) (readerKey, *keys.PublicKey, error) {
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
	sk, err := readReaderKey(e, k)
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
