// Package keyfile reads the key files and passphrases of the crypt4gh
// command: one secret-key loader (any format the keys package reads,
// asking for a passphrase only when the key is protected), one chain of
// passphrase sources (a file, a variable, the terminal, or stdin for a
// new key), and one public-key reader.
package keyfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
)

// MaxSize is the most that is read of a key file or a passphrase file:
// far more than any key, so that --sk /dev/zero fails at once. An output
// larger than that is replaced with --force without being read: it is no
// key file.
const MaxSize = outfile.MaxKeyFile

// The variables that the other Crypt4GH tools read.
const (
	PassphraseEnv    = "C4GH_PASSPHRASE"
	NewPassphraseEnv = "C4GH_NEW_PASSPHRASE"
	SecretKeyEnv     = "C4GH_SECRET_KEY"
	PublicKeyEnv     = "C4GH_PUBLIC_KEY"
)

// Loader reads secret keys and passphrases for one run: it may read stdin
// (a passphrase piped for a new key, or --passphrase-file -) and warns
// through Warn.
type Loader struct {
	Stdin io.Reader
	// Warn prints a warning (a key file that others may read, a
	// passphrase taken from a variable).
	Warn func(format string, args ...any)
	// Quiet leaves out the warning that a passphrase came from a
	// variable.
	Quiet bool
}

// ExpandHome turns a leading "~" or "~/" of a key path into the home
// folder, as the reference tool does (a shell does it only at the start of
// a word, not in --sk=~/k or in a variable).
func ExpandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, path[1:])
}

// Read reads a key file of at most MaxSize bytes. what names
// it in messages ("secret key", "public key", "passphrase"). Every error
// is a key error (exit 3): a missing, unreadable or oversized file, or a
// folder.
func Read(what, path string) ([]byte, error) {
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
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		clear(data)
		return nil, keyError(fmt.Errorf("failed to read %s %s: %w", what, quoteName(path), pathErr(err)))
	}
	if len(data) > MaxSize {
		clear(data)
		return nil, keyError(fmt.Errorf("%s %s is larger than %d KiB: not a key file", what, quoteName(path), MaxSize>>10))
	}
	return data, nil
}

// WarnReadable warns when group or others may read the regular file at
// path, which holds a secret.
func (l *Loader) WarnReadable(what, path string) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	l.Warn("%s %s is readable by others (mode %04o); run chmod 600 %s", what, quoteName(path), fi.Mode().Perm(), quoteName(path))
}

// SecretKey reads the secret key at path, asking for its passphrase
// (from passFile when it is not empty, else through the chain of
// Passphrase) only when it is protected, and describes its file. A wrong
// passphrase typed at the terminal is asked again, up to three times in
// all.
func (l *Loader) SecretKey(path, passFile string) (*keys.SecretKey, keys.SecretKeyInfo, error) {
	data, err := Read("secret key file", path)
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
	l.WarnReadable("secret key", path)
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
			pass, typed, err = l.passphraseFrom(Current(passFile), "Passphrase for "+quoteName(path)+": ", retry)
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

// Source says where one passphrase comes from.
type Source struct {
	File string // the file that holds it, when its flag is given
	Flag string // that flag, for messages
	Env  string // the variable that holds it
	// Stdin: when the process has no terminal or stdin is not one, read
	// the passphrase from stdin (for keygen, which reads no data there).
	Stdin bool
	// Confirm asks twice on the terminal (up to three times when the two
	// differ) and reads two lines from stdin.
	Confirm bool
	// EmptyOK: an empty passphrase typed or piped means none.
	EmptyOK bool
}

// Current unlocks an existing secret key; file is the command's
// --passphrase-file.
func Current(file string) Source {
	return Source{File: file, Flag: "passphrase-file", Env: PassphraseEnv}
}

// NewKey protects a key made by keygen.
func NewKey(file string) Source {
	return Source{File: file, Flag: "passphrase-file", Env: PassphraseEnv, Stdin: true, Confirm: true, EmptyOK: true}
}

// Relock protects the key written by keygen --convert and --relock,
// whose existing key takes Current.
func Relock(file string) Source {
	return Source{File: file, Flag: "new-passphrase-file", Env: NewPassphraseEnv, Stdin: true, Confirm: true, EmptyOK: true}
}

// Passphrase returns a passphrase from the file of src.Flag ("-" is
// stdin), from the variable src.Env, or from the terminal (or, with
// src.Stdin, from stdin when it is not a terminal), in that order. The
// caller must clear it.
func (l *Loader) Passphrase(src Source, prompt string) ([]byte, error) {
	pass, _, err := l.passphraseFrom(src, prompt, "")
	return pass, err
}

// passphraseFrom is passphrase, and says whether it was typed at the
// terminal; a retry line, when not empty, is shown there before the prompt.
func (l *Loader) passphraseFrom(src Source, prompt, retry string) (pass []byte, typed bool, err error) {
	if src.File != "" {
		pass, err := l.readPassphraseFile(src.File)
		return pass, false, err
	}
	stdinFile, _ := l.Stdin.(*os.File)
	if p := os.Getenv(src.Env); p != "" {
		if src.Stdin && stdinFile != nil && !isTerminal(stdinFile) && pendingInput(stdinFile) {
			// Which one was meant? A key locked with the other could
			// never be opened.
			return nil, false, withHint(usagef("a passphrase is piped on stdin and %s is set too", src.Env),
				"unset %s, or give the passphrase only there (or with --%s)", src.Env, src.Flag)
		}
		switch {
		case src.Confirm:
			// A new key: a script that exports the variable for its
			// decrypt steps would lock keys with it unawares.
			l.Warn("locking the new key with the passphrase in %s", src.Env)
		case !l.Quiet:
			l.Warn("using the passphrase in %s; environment variables can be read by other processes", src.Env)
		}
		return []byte(p), false, nil
	}
	if src.Stdin && !isTerminal(stdinFile) {
		pass, err := readPassphraseLines(l.Stdin, src.Confirm)
		return pass, false, err
	}
	tty, err := openTTY()
	if err != nil {
		why := "there is no terminal to ask for it"
		if !errors.Is(err, syscall.ENXIO) {
			why = err.Error() // not the usual cause: say what it was
		}
		hint := fmt.Sprintf("set %s or use --%s", src.Env, src.Flag)
		return nil, false, withHint(fmt.Errorf("%w: %s", keys.ErrPassphraseRequired, why), "%s", hint)
	}
	defer tty.Close()
	if retry != "" {
		fmt.Fprintln(tty, retry)
	}
	for attempt := 1; ; attempt++ {
		pass, err := readPassphrase(tty, prompt, src.Confirm)
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
func (l *Loader) readPassphraseFile(path string) ([]byte, error) {
	if path == "-" || path == "/dev/stdin" || path == "/dev/fd/0" {
		return readPassphraseLines(l.Stdin, false)
	}
	data, err := Read("passphrase file", path)
	if err != nil {
		return nil, err
	}
	defer clear(data)
	l.WarnReadable("passphrase file", path)
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.Clone(bytes.TrimSuffix(line, []byte("\r"))), nil
}

// readPassphraseLines reads a passphrase line from r, and with confirm a
// second line that must be the same, as "printf 'pw\npw\n' | crypt4gh
// keygen" gives them.
func readPassphraseLines(r io.Reader, confirm bool) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxSize), 4096)
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

// NewPassphrase returns the passphrase for a new secret key from src,
// nil for none when it is empty and src allows it.
func (l *Loader) NewPassphrase(src Source, prompt string) ([]byte, error) {
	pass, err := l.Passphrase(src, prompt)
	if err != nil {
		return nil, err
	}
	if len(pass) == 0 {
		if !src.EmptyOK || src.File != "" {
			return nil, usagef("empty passphrase: use --nocrypt for a key without passphrase")
		}
		l.Warn("empty passphrase: the secret key is stored without protection")
		return nil, nil
	}
	return pass, nil
}

// ReadPublicKeys loads every key of every public key file in paths, in
// order, dropping duplicates. A file may hold several keys, one per
// recipient.
func ReadPublicKeys(paths []string) ([]keys.PublicKey, error) {
	var out []keys.PublicKey
	seen := map[keys.PublicKey]bool{}
	for _, path := range paths {
		path = ExpandHome(path)
		data, err := Read("public key file", path)
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
