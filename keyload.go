package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// Flags shared by the commands.
var (
	skFlag = &cli.StringFlag{
		Name:    "sk",
		Usage:   "secret key `PATH` (crypt4gh, OpenSSH ed25519 or PKCS#8 X25519)",
		EnvVars: []string{"C4GH_SECRET_KEY"},
	}
	passphraseFileFlag = &cli.StringFlag{
		Name:  "passphrase-file",
		Usage: "read the secret key's passphrase from the first line of `PATH`",
	}
	inputFlag = &cli.StringFlag{
		Name:    "input",
		Aliases: []string{"i"},
		Usage:   "read from `PATH` instead of stdin",
	}
	outputFlag = &cli.StringFlag{
		Name:    "output",
		Aliases: []string{"o"},
		Usage:   "write to `PATH` instead of stdout (\"-\" forces stdout)",
	}
	forceFlag = &cli.BoolFlag{
		Name:    "force",
		Aliases: []string{"f"},
		Usage:   "replace an existing output file",
	}
	jobsFlag = &cli.IntFlag{
		Name:  "jobs",
		Usage: "`N` segments sealed or opened in parallel (0: one per CPU)",
	}
)

// passphraseEnv is the variable that the other Crypt4GH tools read the
// passphrase from.
const passphraseEnv = "C4GH_PASSPHRASE"

// readSecretKey loads the secret key named by --sk, asking for its
// passphrase only when the key is protected.
func readSecretKey(c *cli.Context) (*keys.SecretKey, error) {
	path := c.String("sk")
	if path == "" {
		return nil, usagef("no secret key: use --sk PATH or set C4GH_SECRET_KEY")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read secret key: %w", err)
	}
	defer clear(data)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		warnf(c, "secret key %s is readable by others (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	// The key package does not keep the passphrase; erase it once the
	// key is derived.
	var pass []byte
	sk, err := keys.ParseSecretKey(data, func() ([]byte, error) {
		var err error
		pass, err = passphrase(c, "Passphrase for "+path+": ")
		return pass, err
	})
	clear(pass)
	if err != nil {
		return nil, fmt.Errorf("failed to read secret key %s: %w", path, err)
	}
	return &sk, nil
}

// readPassphraseFile returns the first line of the file at path, without
// its line ending, and warns when others may read the file.
func readPassphraseFile(c *cli.Context, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read passphrase file: %w", err)
	}
	defer clear(data)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
		warnf(c, "passphrase file %s is readable by others (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.Clone(bytes.TrimSuffix(line, []byte("\r"))), nil
}

// readReaderKeys loads the secret key of --sk and, when --sender_pk is
// given, the public key that every accepted packet must be written by.
func readReaderKeys(c *cli.Context) (*keys.SecretKey, *keys.PublicKey, error) {
	var sender *keys.PublicKey
	if p := c.String("sender_pk"); p != "" {
		pk, err := readPublicKey(p)
		if err != nil {
			return nil, nil, err
		}
		sender = &pk
	}
	sk, err := readSecretKey(c)
	if err != nil {
		return nil, nil, err
	}
	return sk, sender, nil
}

// passphrase returns the passphrase from --passphrase-file, from
// C4GH_PASSPHRASE or from the terminal, in that order.
func passphrase(c *cli.Context, prompt string) ([]byte, error) {
	if path := c.String("passphrase-file"); path != "" {
		return readPassphraseFile(c, path)
	}
	if p := os.Getenv(passphraseEnv); p != "" {
		warnf(c, "using the passphrase in %s; environment variables can be read by other processes", passphraseEnv)
		return []byte(p), nil
	}
	p, err := keys.ReadPassphrase(prompt, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (set %s or use --passphrase-file)", keys.ErrPassphraseRequired, err, passphraseEnv)
	}
	return p, nil
}

// readPublicKeys loads every public key file in paths, dropping duplicates.
func readPublicKeys(paths []string) ([]keys.PublicKey, error) {
	var out []keys.PublicKey
	seen := map[keys.PublicKey]bool{}
	for _, path := range paths {
		pk, err := readPublicKey(path)
		if err != nil {
			return nil, err
		}
		if !seen[pk] {
			seen[pk] = true
			out = append(out, pk)
		}
	}
	return out, nil
}

func readPublicKey(path string) (keys.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return keys.PublicKey{}, usagef("public key file %q does not exist", path)
		}
		return keys.PublicKey{}, fmt.Errorf("failed to read public key: %w", err)
	}
	pk, err := keys.ParsePublicKey(data)
	if err != nil {
		return keys.PublicKey{}, fmt.Errorf("failed to read public key %s: %w", path, err)
	}
	return pk, nil
}
