package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/c4gh-go/crypt4gh/keys"
)

// Every key file and passphrase is read here: one secret-key loader, one
// passphrase chain, one public-key reader.

// maxKeyFile is the most that is read of a key file or a passphrase file:
// far more than any key, so that --sk /dev/zero fails at once.
const maxKeyFile = 1 << 20

// The variables that the other Crypt4GH tools read.
const (
	passphraseEnv    = "C4GH_PASSPHRASE"
	newPassphraseEnv = "C4GH_NEW_PASSPHRASE"
	secretKeyEnv     = "C4GH_SECRET_KEY"
	publicKeyEnv     = "C4GH_PUBLIC_KEY"
)

// expandHome turns a leading "~" or "~/" of a key path into the home
// folder, as the reference tool does (a shell does it only at the start of
// a word, not in --sk=~/k or in a variable).
func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, path[1:])
}

// readKeyFile reads a key file of at most maxKeyFile bytes. what names
// it in messages ("secret key", "public key", "passphrase"). Every error
// is a key error (exit 3): a missing, unreadable or oversized file, or a
// folder.
func readKeyFile(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, keyError(fmt.Errorf("%s %q does not exist", what, path))
		}
		return nil, keyError(fmt.Errorf("failed to read %s %s: %w", what, quoteName(path), pathErr(err)))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, keyError(fmt.Errorf("%s %s is a directory", what, quoteName(path)))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		clear(data)
		return nil, keyError(fmt.Errorf("failed to read %s %s: %w", what, quoteName(path), pathErr(err)))
	}
	if len(data) > maxKeyFile {
		clear(data)
		return nil, keyError(fmt.Errorf("%s %s is larger than %d KiB: not a key file", what, quoteName(path), maxKeyFile>>10))
	}
	return data, nil
}

// warnReadable warns when group or others may read the regular file at
// path, which holds a secret.
func (e *env) warnReadable(what, path string) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	e.warnf("%s %s is readable by others (mode %04o); run chmod 600 %s", what, quoteName(path), fi.Mode().Perm(), quoteName(path))
}

// secretKeyPath is the --sk of a command, or C4GH_SECRET_KEY.
func (k keyOptions) secretKeyPath() string { return expandHome(k.SK) }

// loadSecretKey reads the secret key named by --sk, asking for its
// passphrase (through the chain of passphrase) only when it is protected,
// and describes its file.
func loadSecretKey(e *env, k keyOptions) (*keys.SecretKey, keys.SecretKeyInfo, error) {
	path := k.secretKeyPath()
	if path == "" {
		return nil, keys.SecretKeyInfo{}, usagef("no secret key: use --sk PATH or set %s", secretKeyEnv)
	}
	data, err := readKeyFile("secret key file", path)
	if err != nil {
		return nil, keys.SecretKeyInfo{}, err
	}
	defer clear(data)
	info, err := keys.InspectSecretKey(data)
	if err != nil {
		// Not a secret key (a public key given as --sk, say): its
		// mode is no matter, the error is.
		return nil, keys.SecretKeyInfo{}, fmt.Errorf("failed to read secret key %s: %w", quoteName(path), err)
	}
	e.warnReadable("secret key", path)
	// The key package does not keep the passphrase; erase it once the
	// key is derived. A wrong one typed at the terminal is asked again,
	// up to three times in all, as ssh and sudo do.
	var sk keys.SecretKey
	retry := ""
	for attempt := 1; ; attempt++ {
		var pass []byte
		typed := false
		sk, err = keys.ParseSecretKey(data, func() ([]byte, error) {
			var err error
			pass, typed, err = passphraseFrom(e, currentPassphrase(k.PassphraseFile), "Passphrase for "+quoteName(path)+": ", retry)
			return pass, err
		})
		clear(pass)
		if !typed || attempt == 3 || !errors.Is(err, keys.ErrWrongPassphrase) {
			break
		}
		retry = "Wrong passphrase; try again."
	}
	if err != nil {
		return nil, keys.SecretKeyInfo{}, fmt.Errorf("failed to read secret key %s: %w", quoteName(path), err)
	}
	return &sk, info, nil
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

// passSource says where one passphrase comes from.
type passSource struct {
	file string // the file that holds it, when its flag is given
	flag string // that flag, for messages
	env  string // the variable that holds it
	// stdin: when the process has no terminal or stdin is not one, read
	// the passphrase from stdin (for keygen, which reads no data there).
	stdin bool
	// confirm asks twice on the terminal (up to three times when the two
	// differ) and reads two lines from stdin.
	confirm bool
	// emptyOK: an empty passphrase typed or piped means none.
	emptyOK bool
}

// currentPassphrase unlocks an existing secret key; file is the
// command's --passphrase-file.
func currentPassphrase(file string) passSource {
	return passSource{file: file, flag: "passphrase-file", env: passphraseEnv}
}

// newKeyPassphrase protects a key made by keygen.
func newKeyPassphrase(file string) passSource {
	return passSource{file: file, flag: "passphrase-file", env: passphraseEnv, stdin: true, confirm: true, emptyOK: true}
}

// relockPassphrase protects the key written by keygen --convert and
// --relock, whose existing key takes currentPassphrase.
func relockPassphrase(file string) passSource {
	return passSource{file: file, flag: "new-passphrase-file", env: newPassphraseEnv, stdin: true, confirm: true, emptyOK: true}
}

// passphrase returns a passphrase from the file of src.flag ("-" is
// stdin), from the variable src.env, or from the terminal (or, with
// src.stdin, from stdin when it is not a terminal), in that order. The
// caller must clear it.
func passphrase(e *env, src passSource, prompt string) ([]byte, error) {
	pass, _, err := passphraseFrom(e, src, prompt, "")
	return pass, err
}

// passphraseFrom is passphrase, and says whether it was typed at the
// terminal; a retry line, when not empty, is shown there before the prompt.
func passphraseFrom(e *env, src passSource, prompt, retry string) (pass []byte, typed bool, err error) {
	if src.file != "" {
		pass, err := readPassphraseFile(e, src.file)
		return pass, false, err
	}
	stdinFile, _ := e.stdin.(*os.File)
	if p := os.Getenv(src.env); p != "" {
		if src.stdin && stdinFile != nil && !outfile.IsTerminal(stdinFile) && pendingInput(stdinFile) {
			// Which one was meant? A key locked with the other could
			// never be opened.
			return nil, false, withHint(usagef("a passphrase is piped on stdin and %s is set too", src.env),
				"unset %s, or give the passphrase only there (or with --%s)", src.env, src.flag)
		}
		switch {
		case src.confirm:
			// A new key: a script that exports the variable for its
			// decrypt steps would lock keys with it unawares.
			e.warnf("locking the new key with the passphrase in %s", src.env)
		case !e.quiet:
			e.warnf("using the passphrase in %s; environment variables can be read by other processes", src.env)
		}
		return []byte(p), false, nil
	}
	if src.stdin && !outfile.IsTerminal(stdinFile) {
		pass, err := readPassphraseLines(e.stdin, src.confirm)
		return pass, false, err
	}
	tty, err := openTTY()
	if err != nil {
		hint := fmt.Sprintf("set %s or use --%s", src.env, src.flag)
		return nil, false, withHint(fmt.Errorf("%w: %v", keys.ErrPassphraseRequired, err), "%s", hint)
	}
	defer tty.Close()
	if retry != "" {
		fmt.Fprintln(tty, retry)
	}
	for attempt := 1; ; attempt++ {
		pass, err := readPassphrase(tty, prompt, src.confirm)
		if errors.Is(err, errMismatch) && attempt < 3 {
			fmt.Fprintln(tty, "The passphrases do not match; try again.")
			continue
		}
		if errors.Is(err, errMismatch) {
			return nil, true, withHint(usage(err), "type the same passphrase twice")
		}
		return pass, true, err
	}
}

// readPassphraseFile returns the first line of the file at path ("-" is
// stdin), without its line ending, and warns when others may read the file.
func readPassphraseFile(e *env, path string) ([]byte, error) {
	if path == "-" || path == "/dev/stdin" || path == "/dev/fd/0" {
		return readPassphraseLines(e.stdin, false)
	}
	data, err := readKeyFile("passphrase file", path)
	if err != nil {
		return nil, err
	}
	defer clear(data)
	e.warnReadable("passphrase file", path)
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.Clone(bytes.TrimSuffix(line, []byte("\r"))), nil
}

// readPassphraseLines reads a passphrase line from r, and with confirm a
// second line that must be the same, as "printf 'pw\npw\n' | crypt4gh
// keygen" gives them.
func readPassphraseLines(r io.Reader, confirm bool) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxKeyFile), 4096)
	line := func() ([]byte, error) {
		b, err := br.ReadSlice('\n')
		if err != nil && !(err == io.EOF && len(b) > 0) {
			clear(b)
			if err == io.EOF {
				return nil, keyError(errors.New("no passphrase on stdin (a new one is given twice, one line each)"))
			}
			return nil, keyError(fmt.Errorf("failed to read the passphrase from stdin: %w", err))
		}
		p := bytes.Clone(bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")))
		clear(b)
		return p, nil
	}
	pass, err := line()
	if err != nil || !confirm {
		return pass, err
	}
	again, err := line()
	if err != nil {
		clear(pass)
		return nil, err
	}
	defer clear(again)
	if !bytes.Equal(pass, again) {
		clear(pass)
		return nil, usage(errMismatch)
	}
	return pass, nil
}

// newPassphrase returns the passphrase for a new secret key from src,
// nil for none when it is empty and src allows it.
func newPassphrase(e *env, src passSource, prompt string) ([]byte, error) {
	pass, err := passphrase(e, src, prompt)
	if err != nil {
		return nil, err
	}
	if len(pass) == 0 {
		if !src.emptyOK || src.file != "" {
			return nil, usagef("empty passphrase: use --nocrypt for a key without passphrase")
		}
		e.warnf("empty passphrase: the secret key is stored without protection")
		return nil, nil
	}
	return pass, nil
}

// readPublicKeys loads every key of every public key file in paths, in
// order, dropping duplicates. A file may hold several keys, one per
// recipient.
func readPublicKeys(paths []string) ([]keys.PublicKey, error) {
	var out []keys.PublicKey
	seen := map[keys.PublicKey]bool{}
	for _, path := range paths {
		path = expandHome(path)
		data, err := readKeyFile("public key file", path)
		if err != nil {
			return nil, err
		}
		pks, err := keys.ParsePublicKeys(data)
		if err != nil {
			return nil, fmt.Errorf("failed to read public key %s: %w", quoteName(path), err)
		}
		for _, pk := range pks {
			if !seen[pk] {
				seen[pk] = true
				out = append(out, pk)
			}
		}
	}
	return out, nil
}
