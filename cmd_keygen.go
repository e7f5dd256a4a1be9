package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "generate a crypt4gh key pair, or derive, convert or relock an existing secret key",
		UsageText: "crypt4gh keygen --sk NEW.sec --pk NEW.pub [--nocrypt] [--kdf NAME] [-C TEXT]\n" +
			"crypt4gh keygen --derive --sk KEY --pk OUT.pub\n" +
			"crypt4gh keygen --convert --sk KEY -o NEW.sec [--pk NEW.pub] [--nocrypt] [--kdf NAME] [-C TEXT]\n" +
			"crypt4gh keygen --relock --sk KEY.sec [--nocrypt] [--kdf NAME] [-C TEXT]",
		Description: "Without a mode flag, writes a new X25519 key pair in crypt4gh format. The\n" +
			"secret key is protected with a passphrase, asked twice on the terminal or taken\n" +
			"from C4GH_PASSPHRASE or --passphrase-file, unless --nocrypt is given.\n" +
			"\n" +
			"With --derive, --convert or --relock, --sk names an existing secret key (crypt4gh,\n" +
			"OpenSSH ed25519 or PKCS#8 X25519), unlocked with the passphrase from\n" +
			"--passphrase-file, C4GH_PASSPHRASE or the terminal:\n" +
			"  --derive   writes its public key to --pk (as \"crypt4gh pubkey\" does);\n" +
			"  --convert  writes it in crypt4gh format to -o, and its public key to --pk if given;\n" +
			"  --relock   changes the passphrase, KDF or comment of a crypt4gh secret key in\n" +
			"             place (new file then rename; an OpenSSH or PKCS#8 key is never\n" +
			"             overwritten: use --convert).\n" +
			"The new passphrase of --convert and --relock is asked twice on the terminal, or\n" +
			"taken from C4GH_NEW_PASSPHRASE or --new-passphrase-file; --nocrypt stores the key\n" +
			"without one. They keep the KDF and the comment of a crypt4gh key unless --kdf or\n" +
			"-C is given, and use scrypt otherwise.\n" +
			"\n" +
			"Secret keys are created with mode 0600 and public keys with mode 0644; an existing\n" +
			"file is replaced only with -f.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sk", Usage: "the secret key `PATH`: written, or read with --derive, --convert and --relock", EnvVars: []string{"C4GH_SECRET_KEY"}},
			&cli.StringFlag{Name: "pk", Usage: "write the public key to `PATH`", EnvVars: []string{"C4GH_PUBLIC_KEY"}},
			&cli.BoolFlag{Name: "derive", Usage: "write the public key of the existing secret key --sk to --pk"},
			&cli.BoolFlag{Name: "convert", Usage: "write the existing secret key --sk in crypt4gh format to --output"},
			&cli.BoolFlag{Name: "relock", Usage: "change the passphrase, KDF or comment of the crypt4gh secret key --sk in place"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "with --convert: write the crypt4gh secret key to `PATH`"},
			&cli.StringFlag{Name: "comment", Aliases: []string{"C"}, Usage: "store `TEXT` in clear in the secret key"},
			&cli.BoolFlag{Name: "nocrypt", Usage: "do not protect the secret key with a passphrase"},
			&cli.StringFlag{Name: "kdf", Value: string(keys.KDFScrypt), Usage: "passphrase KDF: scrypt, bcrypt or pbkdf2_hmac_sha256"},
			passphraseFileFlag,
			newPassphraseFileFlag,
			forceFlag,
		},
		Action: keygen,
	}
}

// newPassphraseFileFlag and newPassphraseEnv give the new passphrase of
// keygen --convert and --relock without a terminal.
var newPassphraseFileFlag = &cli.StringFlag{
	Name:  "new-passphrase-file",
	Usage: "with --convert and --relock: read the new passphrase from the first line of `PATH`",
}

const newPassphraseEnv = "C4GH_NEW_PASSPHRASE"

func keygen(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q", c.Args().First())
	}
	var modes []string
	for _, m := range []string{"derive", "convert", "relock"} {
		if c.Bool(m) {
			modes = append(modes, "--"+m)
		}
	}
	if len(modes) > 1 {
		return usagef("%s and %s cannot be used together", modes[0], modes[1])
	}
	if len(modes) == 0 && c.String("output") != "" {
		return usagef("-o/--output is for --convert; a new key pair is written to --sk and --pk")
	}
	if _, err := kdfFlag(c); err != nil {
		return err
	}
	switch {
	case c.Bool("derive"):
		return keygenDerive(c)
	case c.Bool("convert"):
		return keygenConvert(c)
	case c.Bool("relock"):
		return keygenRelock(c)
	}
	skPath, pkPath := c.String("sk"), c.String("pk")
	if skPath == "" || pkPath == "" {
		return usagef("keygen needs --sk PATH and --pk PATH")
	}
	kdf, _ := kdfFlag(c)
	if !c.Bool("force") {
		for _, p := range []string{skPath, pkPath} {
			if _, err := os.Stat(p); err == nil {
				return withHint(usagef("%s already exists", p), "use -f to replace it")
			}
		}
	}
	var pass []byte
	if c.Bool("nocrypt") {
		kdf = keys.KDFNone
	} else {
		var err error
		pass, err = newPassphrase(c)
		if err != nil {
			return err
		}
		defer clear(pass)
	}
	sk, err := keys.Generate(nil)
	if err != nil {
		return err
	}
	defer sk.Zero()
	skData, err := keys.MarshalSecretKey(&sk, pass, kdf, c.String("comment"), nil)
	if err != nil {
		return err
	}
	defer clear(skData)
	return writePair(skPath, skData, pkPath, &sk, c.Bool("force"))
}

// writePair writes a new secret key file and then its public key file.
// When the public key cannot be written, a secret key file that did not
// exist before is removed again, so that a failed keygen leaves no half
// of a key pair behind (and can simply be run again). A secret key that
// replaced an older one with -f is kept: the older one is gone already.
func writePair(skPath string, skData []byte, pkPath string, sk *keys.SecretKey, force bool) error {
	_, statErr := os.Lstat(skPath)
	existed := statErr == nil
	if err := writeNew(skPath, skData, 0o600, force); err != nil {
		return err
	}
	if pkPath == "" {
		return nil
	}
	err := writeNew(pkPath, keys.MarshalPublicKey(sk.Public()), 0o644, force)
	if err == nil {
		return nil
	}
	if !existed {
		os.Remove(skPath)
		return err
	}
	return withHint(err, "the new secret key is in %s; write its public key with: crypt4gh pubkey --sk %s -o PATH", skPath, skPath)
}

// kdfFlag returns the KDF that --kdf names.
func kdfFlag(c *cli.Context) (keys.KDF, error) {
	kdf := keys.KDF(c.String("kdf"))
	switch kdf {
	case keys.KDFScrypt, keys.KDFBcrypt, keys.KDFPBKDF2:
		return kdf, nil
	}
	return "", usagef("unknown --kdf %q: use scrypt, bcrypt or pbkdf2_hmac_sha256", kdf)
}

// newPassphrase asks for a new passphrase twice on the terminal, or takes
// it from --passphrase-file or C4GH_PASSPHRASE.
func newPassphrase(c *cli.Context) ([]byte, error) {
	var pass []byte
	var err error
	if c.String("passphrase-file") != "" || os.Getenv(passphraseEnv) != "" {
		pass, err = passphrase(c, "")
	} else {
		pass, err = keys.ReadPassphrase("Passphrase for the new secret key: ", true)
		if err != nil {
			return nil, withHint(fmt.Errorf("%w: %v", keys.ErrPassphraseRequired, err),
				"set %s, use --passphrase-file, or --nocrypt for a key without passphrase", passphraseEnv)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(pass) == 0 {
		return nil, usagef("empty passphrase: use --nocrypt for a key without passphrase")
	}
	return pass, nil
}

// writeNew writes data to a file created with the given mode; an existing
// file is replaced only when force is set, and then keeps no looser mode.
func writeNew(path string, data []byte, mode os.FileMode, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		// Only a regular file is replaced, and through a symbolic link
		// the file it points to: removing the link itself could remove
		// /dev/stdout, or a device, when run as root.
		if _, err := os.Lstat(path); err == nil {
			target, err := filepath.EvalSymlinks(path)
			if err != nil {
				return fmt.Errorf("failed to replace %s: %w", path, err)
			}
			if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
				return usagef("%s is not a regular file; refusing to replace it", path)
			}
			path = target
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to replace %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, flags, mode)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// keygenDerive writes the public key of an existing secret key.
func keygenDerive(c *cli.Context) error {
	if err := unusedWith(c, "--derive", "output", "comment", "nocrypt", "kdf", "new-passphrase-file"); err != nil {
		return err
	}
	pkPath := c.String("pk")
	if pkPath == "" {
		return withHint(usagef("--derive needs --pk PATH"), "crypt4gh pubkey --sk KEY prints the public key instead")
	}
	if err := refuseExisting(c, pkPath); err != nil {
		return err
	}
	sk, _, err := readExistingKey(c, "--derive")
	if err != nil {
		return err
	}
	defer sk.Zero()
	return writeNew(pkPath, keys.MarshalPublicKey(sk.Public()), 0o644, c.Bool("force"))
}

// keygenConvert writes an existing secret key of any format as a new
// crypt4gh secret key, and optionally its public key.
func keygenConvert(c *cli.Context) error {
	out, pkPath := c.String("output"), c.String("pk")
	switch out {
	case "":
		return usagef("--convert needs -o PATH for the crypt4gh secret key")
	case "-":
		return usagef("--convert writes the secret key to a file, not to stdout")
	}
	for _, p := range []string{out, pkPath} {
		if err := refuseExisting(c, p); err != nil {
			return err
		}
	}
	if in, err := os.Stat(c.String("sk")); err == nil {
		if o, err := os.Stat(out); err == nil && os.SameFile(in, o) {
			return withHint(usagef("-o %s is the secret key being converted", out), "use --relock to change a crypt4gh key in place")
		}
	}
	sk, info, err := readExistingKey(c, "--convert")
	if err != nil {
		return err
	}
	defer sk.Zero()
	data, err := marshalRelocked(c, sk, info)
	if err != nil {
		return err
	}
	defer clear(data)
	return writePair(out, data, pkPath, sk, c.Bool("force"))
}

// keygenRelock rewrites a crypt4gh secret key with a new passphrase, KDF or
// comment. The new key is written to a temporary file that replaces the
// old one only once it is complete.
func keygenRelock(c *cli.Context) error {
	if err := unusedWith(c, "--relock", "output"); err != nil {
		return withHint(err, "--relock rewrites --sk in place; use --convert -o PATH to write a new file")
	}
	if pk := c.String("pk"); pk != "" && pk != os.Getenv("C4GH_PUBLIC_KEY") {
		return withHint(usagef("--relock does not write a public key"), "the public key does not change; use --derive --pk PATH to write it")
	}
	path := c.String("sk")
	sk, info, err := readExistingKey(c, "--relock")
	if err != nil {
		return err
	}
	defer sk.Zero()
	if info.Format != keys.FormatCrypt4GH {
		return withHint(usagef("%s is a key in %s format; --relock rewrites only crypt4gh keys", path, info.Format),
			"use --convert --sk %s -o NEW.sec to write it as a crypt4gh key; the original stays as it is", path)
	}
	data, err := marshalRelocked(c, sk, info)
	if err != nil {
		return err
	}
	defer clear(data)
	// Replace the file a symbolic link points to, not the link.
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("failed to resolve %s: %w", path, err)
	}
	return replaceFile(target, data, 0o600)
}

// unusedWith returns a usage error when one of the named flags is given
// with a mode that does not use it.
func unusedWith(c *cli.Context, mode string, names ...string) error {
	for _, n := range names {
		if c.IsSet(n) {
			return usagef("--%s has no effect with %s", n, mode)
		}
	}
	return nil
}

// refuseExisting returns an error when path exists and -f was not given.
func refuseExisting(c *cli.Context, path string) error {
	if path == "" || c.Bool("force") {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return withHint(usagef("%s already exists", path), "use -f to replace it")
	}
	return nil
}

// readExistingKey reads the secret key that --sk names for one of the
// modes that work on an existing key, and describes its file.
func readExistingKey(c *cli.Context, mode string) (*keys.SecretKey, keys.SecretKeyInfo, error) {
	path := c.String("sk")
	if path == "" {
		return nil, keys.SecretKeyInfo{}, usagef("%s needs the existing secret key: use --sk PATH", mode)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, keys.SecretKeyInfo{}, usagef("secret key file %q does not exist", path)
		}
		return nil, keys.SecretKeyInfo{}, fmt.Errorf("failed to read secret key: %w", err)
	}
	defer clear(data)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		warnf(c, "secret key %s is readable by others (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	info, err := keys.InspectSecretKey(data)
	if err != nil {
		return nil, keys.SecretKeyInfo{}, fmt.Errorf("failed to read secret key %s: %w", path, err)
	}
	sk, err := keys.ParseSecretKey(data, func() ([]byte, error) { return passphrase(c, "Passphrase for "+path+": ") })
	if err != nil {
		return nil, keys.SecretKeyInfo{}, fmt.Errorf("failed to read secret key %s: %w", path, err)
	}
	return &sk, info, nil
}

// marshalRelocked returns sk in crypt4gh format for --convert and --relock:
// protected with the new passphrase unless --nocrypt, with the KDF of
// --kdf or else of the original crypt4gh key (scrypt for other formats and
// for unprotected keys), and with the comment of -C or else the original
// one.
func marshalRelocked(c *cli.Context, sk *keys.SecretKey, info keys.SecretKeyInfo) ([]byte, error) {
	kdf := keys.KDFNone
	var pass []byte
	if !c.Bool("nocrypt") {
		switch {
		case c.IsSet("kdf"):
			kdf, _ = kdfFlag(c)
		case info.Format == keys.FormatCrypt4GH && info.KDF != keys.KDFNone:
			kdf = info.KDF
		default:
			kdf = keys.KDFScrypt
		}
		var err error
		if pass, err = newKeyPassphrase(c); err != nil {
			return nil, err
		}
		defer clear(pass)
	} else if err := unusedWith(c, "--nocrypt", "new-passphrase-file", "kdf"); err != nil {
		return nil, err
	}
	comment := info.Comment
	if c.IsSet("comment") {
		comment = c.String("comment")
	}
	return keys.MarshalSecretKey(sk, pass, kdf, comment, nil)
}

// newKeyPassphrase returns the new passphrase of --convert and --relock:
// from --new-passphrase-file, from C4GH_NEW_PASSPHRASE, or asked twice on
// the terminal, in that order. C4GH_PASSPHRASE and --passphrase-file are
// for the existing key only.
func newKeyPassphrase(c *cli.Context) ([]byte, error) {
	var pass []byte
	if path := c.String("new-passphrase-file"); path != "" {
		var err error
		if pass, err = readPassphraseFile(c, path); err != nil {
			return nil, err
		}
	} else if p := os.Getenv(newPassphraseEnv); p != "" {
		warnf(c, "using the passphrase in %s; environment variables can be read by other processes", newPassphraseEnv)
		pass = []byte(p)
	} else {
		var err error
		pass, err = keys.ReadPassphrase("New passphrase for the secret key: ", true)
		if err != nil {
			return nil, withHint(fmt.Errorf("%w: %v", keys.ErrPassphraseRequired, err),
				"set %s, use --new-passphrase-file, or --nocrypt for a key without passphrase", newPassphraseEnv)
		}
	}
	if len(pass) == 0 {
		return nil, usagef("empty new passphrase: use --nocrypt for a key without passphrase")
	}
	return pass, nil
}

// replaceFile writes data to a temporary file with the given mode next to
// path and renames it over path, so that path holds either the old or the
// new contents, never a mix.
func replaceFile(path string, data []byte, mode os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".new-*")
	if err != nil {
		return fmt.Errorf("failed to replace %s: %w", path, err)
	}
	name := tmp.Name()
	cleanup.add(name)
	defer cleanup.remove(name)
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("failed to replace %s: %w", path, err)
	}
	return nil
}
