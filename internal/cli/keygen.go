package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/c4gh-go/crypt4gh/internal/keyfile"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// keygenOptions are the flags of keygen.
type keygenOptions struct {
	SK, PK            string // --sk, --pk
	Derive            bool
	Convert           bool
	Relock            bool
	Output            string // with --convert
	Comment           string
	NoCrypt           bool
	KDF               string
	PassphraseFile    string
	NewPassphraseFile string
	Force, Quiet      bool
	Version           bool
	given             map[string]bool // the flags given, by name
}

// keys are the key options of the existing key of --derive, --convert
// and --relock.
func (o *keygenOptions) keys() keyOptions {
	return keyOptions{SK: o.SK, PassphraseFile: o.PassphraseFile}
}

func keygenCommand(e *env) command {
	o := &keygenOptions{}
	return command{Command: &cli.Command{
		Name:  "keygen",
		Usage: "generate a crypt4gh key pair, or derive, convert or relock an existing secret key",
		UsageText: "crypt4gh keygen [--sk NEW.sec] [--pk NEW.pub] [--nocrypt] [--kdf NAME] [-C TEXT]\n" +
			"crypt4gh keygen --derive --sk KEY --pk OUT.pub\n" +
			"crypt4gh keygen --convert --sk KEY -o NEW.sec [--pk NEW.pub] [--nocrypt] [--kdf NAME] [-C TEXT]\n" +
			"crypt4gh keygen --relock --sk KEY.sec [--nocrypt] [--kdf NAME] [-C TEXT]",
		Description: "Without a mode flag, writes a new X25519 key pair in crypt4gh format, to --sk\n" +
			"and --pk (default: ~/.c4gh/key and ~/.c4gh/key.pub). The secret key is\n" +
			"protected with a passphrase, asked twice on the terminal (or read from stdin\n" +
			"when it is not a terminal) or taken from C4GH_PASSPHRASE or --passphrase-file,\n" +
			"unless --nocrypt is given or the passphrase typed is empty.\n" +
			"\n" +
			"With --derive, --convert or --relock, --sk names an existing secret key (crypt4gh,\n" +
			"OpenSSH ed25519 or PKCS#8 X25519), unlocked with the passphrase from\n" +
			"--passphrase-file, C4GH_PASSPHRASE or the terminal:\n" +
			"  --derive   writes its public key to --pk (as \"crypt4gh pubkey\" does);\n" +
			"  --convert  writes it in crypt4gh format to -o (its public key to --pk);\n" +
			"  --relock   changes the passphrase, KDF or comment of a crypt4gh secret key in\n" +
			"             place (new file then rename; an OpenSSH or PKCS#8 key is never\n" +
			"             overwritten: use --convert).\n" +
			"The new passphrase of --convert and --relock is asked twice on the terminal, or\n" +
			"taken from C4GH_NEW_PASSPHRASE or --new-passphrase-file; --nocrypt stores the key\n" +
			"without one. They keep the KDF and the comment of a crypt4gh key unless --kdf or\n" +
			"-C is given, and use scrypt otherwise.\n" +
			"\n" +
			"Secret keys are created with mode 0600 and public keys with mode 0666 minus the\n" +
			"umask; an existing file is replaced only with -f, and only by a complete new key.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sk", Usage: "the secret key `PATH`: written, or read with --derive, --convert and --relock", EnvVars: []string{secretKeyEnv}, Destination: &o.SK},
			&cli.StringFlag{Name: "pk", Usage: "write the public key to `PATH`", EnvVars: []string{publicKeyEnv}, Destination: &o.PK},
			&cli.BoolFlag{Name: "derive", Usage: "write the public key of the existing secret key --sk to --pk", Destination: &o.Derive},
			&cli.BoolFlag{Name: "convert", Usage: "write the existing secret key --sk in crypt4gh format to --output", Destination: &o.Convert},
			&cli.BoolFlag{Name: "relock", Usage: "change the passphrase, KDF or comment of the crypt4gh secret key --sk in place", Destination: &o.Relock},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "with --convert: write the crypt4gh secret key to `PATH`", Destination: &o.Output},
			&cli.StringFlag{Name: "comment", Aliases: []string{"C"}, Usage: "store `TEXT` in clear in the secret key", Destination: &o.Comment},
			&cli.BoolFlag{Name: "nocrypt", Usage: "do not protect the secret key with a passphrase", Destination: &o.NoCrypt},
			&cli.StringFlag{Name: "kdf", Value: string(keys.KDFScrypt), Usage: "protect the key with the KDF `NAME`: scrypt, bcrypt or pbkdf2_hmac_sha256", Destination: &o.KDF},
			passphraseFileFlag(&o.PassphraseFile),
			&cli.StringFlag{Name: "new-passphrase-file", Usage: "with --convert and --relock: read the new passphrase from the first line of `PATH`", Destination: &o.NewPassphraseFile},
			forceFlag(&o.Force), quietFlag(&o.Quiet, false),
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (as crypt4gh-keygen -v does)", Destination: &o.Version},
		},
		Action: func(c *cli.Context) error {
			// The flags that a mode refuses, or whose default differs
			// from not given (unusedWith, marshalRelocked).
			o.given = map[string]bool{}
			for _, n := range []string{"output", "comment", "nocrypt", "kdf", "new-passphrase-file", "passphrase-file"} {
				o.given[n] = c.IsSet(n)
			}
			return keygen(e.start(c, o.Quiet, nil), o)
		},
	}, page: page{
		env: []string{secretKeyEnv, publicKeyEnv, passphraseEnv, newPassphraseEnv},
		examples: []string{
			"crypt4gh keygen --sk alice.sec --pk alice.pub -C alice@example.org",
			"crypt4gh keygen --convert --sk ~/.ssh/id_ed25519 -o me.sec --pk me.pub",
		},
	}}
}

// defaultKeyDir is where keygen writes a key pair when no path is given,
// as the reference tool does: ~/.c4gh/key and ~/.c4gh/key.pub.
const defaultKeyDir = ".c4gh"

func keygen(e *env, o *keygenOptions) error {
	if o.Version {
		_, err := fmt.Fprintf(e.stdout, "crypt4gh-keygen version %s\n", version())
		return err
	}
	if len(e.args) > 0 {
		return usagef("unexpected argument %q", e.args[0])
	}
	var modes []string
	for _, m := range []given{{"derive", o.Derive}, {"convert", o.Convert}, {"relock", o.Relock}} {
		if m.set {
			modes = append(modes, "--"+m.name)
		}
	}
	if len(modes) > 1 {
		return usagef("%s and %s cannot be used together", modes[0], modes[1])
	}
	if len(modes) == 0 && o.Output != "" {
		return usagef("-o/--output is for --convert; a new key pair is written to --sk and --pk")
	}
	if _, err := kdfFlag(o.KDF); err != nil {
		return err
	}
	switch {
	case o.Derive:
		return keygenDerive(e, o)
	case o.Convert:
		return keygenConvert(e, o)
	case o.Relock:
		return keygenRelock(e, o)
	}
	if o.NoCrypt {
		// A passphrase given for a key stored in clear: the user meant
		// one of the two.
		if err := unusedWith(o, "--nocrypt", "kdf", "passphrase-file"); err != nil {
			return err
		}
	}
	skPath, pkPath, err := newPairPaths(e, o)
	if err != nil {
		return err
	}
	// The passphrase file is read after the outputs are opened: it may
	// not be one of them.
	files, err := openKeyOutputs(e, o, "--sk", skPath, "--pk", pkPath, keyInputs(keyOptions{PassphraseFile: o.PassphraseFile})...)
	if err != nil {
		return err
	}
	data, err := newSecretKey(e, o)
	if err != nil {
		files.Abort()
		return err
	}
	defer clear(data.marshaled)
	defer data.sk.Zero()
	return files.write(data.marshaled, keys.MarshalPublicKey(data.sk.Public()))
}

// newPairPaths returns where keygen writes a new pair: --sk and --pk (or
// their variables), each on its own defaulting, as in the reference tool,
// to ~/.c4gh/key and ~/.c4gh/key.pub, creating that folder (0700) when
// it is missing.
func newPairPaths(e *env, o *keygenOptions) (string, string, error) {
	skPath, pkPath := expandHome(o.SK), expandHome(o.PK)
	if _, typed := e.typed["sk"]; skPath != "" && !typed {
		// The variable points at the key that decrypt uses: -f, meant
		// for a new pair, would replace that key without its name typed.
		if _, err := os.Lstat(skPath); err == nil {
			return "", "", withHint(usagef("--sk is not given, and %s names %s, which exists", secretKeyEnv, quoteName(skPath)),
				"give --sk PATH for the new secret key")
		}
	}
	if skPath != "" && pkPath != "" {
		return skPath, pkPath, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", usagef("no --sk and --pk, and no home folder for ~/%s: %v", defaultKeyDir, err)
	}
	dir := filepath.Join(home, defaultKeyDir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return "", "", fmt.Errorf("failed to create %s: %w", dir, pathErr(err))
		}
		fmt.Fprintf(e.stderr, "crypt4gh: created %s (mode 0700) for the new key pair\n", quoteName(dir))
	}
	defaultSK := filepath.Join(dir, "key")
	if skPath == "" {
		skPath = defaultSK
	}
	if pkPath == "" {
		pkPath = filepath.Join(dir, "key.pub")
		if _, err := os.Lstat(pkPath); err == nil && o.Force && !outfile.SameFile(skPath, defaultSK) {
			// As the reference tool, --pk defaults to the default pair's
			// public key; -f meant for --sk would replace it with the
			// public key of another secret key.
			return "", "", withHint(usagef("--pk is not given: its default %s is the public key of %s, and -f would replace it with that of %s", quoteName(pkPath), quoteName(defaultSK), quoteName(skPath)),
				"give --pk PATH for the new public key")
		}
	}
	return skPath, pkPath, nil
}

// newKey is a secret key made by keygen, and its file.
type newKey struct {
	sk        keys.SecretKey
	marshaled []byte
}

// newSecretKey generates a key and marshals it with the passphrase of
// newKeyPassphrase (none with --nocrypt or an empty one typed).
func newSecretKey(e *env, o *keygenOptions) (*newKey, error) {
	kdf, _ := kdfFlag(o.KDF)
	var pass []byte
	if o.NoCrypt {
		kdf = keys.KDFNone
	} else {
		var err error
		pass, err = e.keyLoader().NewPassphrase(keyfile.NewKey(o.PassphraseFile), "Passphrase for the new secret key: ")
		if err != nil {
			return nil, err
		}
		defer clear(pass)
		if pass == nil {
			kdf = keys.KDFNone
		}
	}
	k := &newKey{}
	var err error
	if k.sk, err = keys.Generate(nil); err != nil {
		return nil, err
	}
	if k.marshaled, err = keys.MarshalSecretKey(&k.sk, pass, kdf, o.Comment, nil); err != nil {
		k.sk.Zero()
		return nil, err
	}
	return k, nil
}

// keyOutputs are the files of one keygen run: a secret key and, when its
// path is not empty, a public key. Both are opened (and checked) before a
// passphrase is asked, and committed together.
type keyOutputs struct {
	sk, pk    *outfile.Output
	skPath    string
	skExisted bool
}

// openKeyOutputs opens the secret key output skPath (0600) and the public
// key output pkPath (0666 minus the umask, when not empty). They must be
// different files, and different from the files named in also (pairs of
// flag name and path: the keys read).
func openKeyOutputs(e *env, o *keygenOptions, skName, skPath, pkName, pkPath string, also ...string) (*keyOutputs, error) {
	if err := outfile.Distinct(e.stdout, []string{skName, skPath, pkName, pkPath}, also); err != nil {
		return nil, err
	}
	k := &keyOutputs{skPath: skPath}
	_, err := os.Lstat(skPath)
	k.skExisted = err == nil
	if k.sk, err = openKeyFile(o, skPath, true); err != nil {
		return nil, err
	}
	if pkPath != "" {
		if k.pk, err = openKeyFile(o, pkPath, false); err != nil {
			k.sk.Abort()
			return nil, err
		}
	}
	return k, nil
}

// openKeyFile opens a key output, a secret key (0600) or a public key
// (0666 minus the umask): only a regular file is ever replaced.
func openKeyFile(o *keygenOptions, path string, secret bool) (*outfile.Output, error) {
	if outfile.IsStdout(path) {
		// Before the Stat: /dev/stdout may be a file that exists.
		return nil, outfile.KeyToStdout(path)
	}
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		return nil, usagef("%s is not a regular file; refusing to write a key to it", quoteName(path))
	}
	if err == nil && !o.Force {
		return nil, withHint(usagef("%s already exists", quoteName(path)), "use -f to replace it")
	}
	mode := os.FileMode(outfile.ModePublic)
	if secret {
		mode = outfile.ModeSecret
	}
	return outfile.Open(path, nil, outfile.Options{Force: o.Force, Mode: mode, SecretKey: secret})
}

func (k *keyOutputs) Abort() {
	k.sk.Abort()
	if k.pk != nil {
		k.pk.Abort()
	}
}

// write writes and commits the secret key, then the public key. When the
// public key fails, a secret key that did not exist before is removed
// again, so that a failed keygen leaves no half of a key pair behind (and
// can simply be run again).
func (k *keyOutputs) write(skData, pkData []byte) error {
	_, err := k.sk.Write(skData)
	if err == nil && k.pk != nil {
		_, err = k.pk.Write(pkData)
	}
	if err != nil {
		k.Abort()
		return err
	}
	if err := k.sk.Commit(); err != nil {
		if k.pk != nil {
			k.pk.Abort()
		}
		return err
	}
	if k.pk == nil {
		return nil
	}
	if err := k.pk.Commit(); err != nil {
		if !k.skExisted {
			os.Remove(k.sk.Final())
			return err
		}
		return withHint(err, "the new secret key is in %s; write its public key with: crypt4gh pubkey --sk %s -o PATH",
			quoteName(k.skPath), quoteName(k.skPath))
	}
	return nil
}

// kdfFlag returns the KDF that --kdf names.
func kdfFlag(name string) (keys.KDF, error) {
	kdf := keys.KDF(name)
	switch kdf {
	case keys.KDFScrypt, keys.KDFBcrypt, keys.KDFPBKDF2:
		return kdf, nil
	}
	return "", usagef("unknown --kdf %q: use scrypt, bcrypt or pbkdf2_hmac_sha256", kdf)
}

// keygenDerive writes the public key of an existing secret key.
func keygenDerive(e *env, o *keygenOptions) error {
	if err := unusedWith(o, "--derive", "output", "comment", "nocrypt", "kdf", "new-passphrase-file"); err != nil {
		return err
	}
	pkPath := expandHome(o.PK)
	if pkPath == "" {
		return withHint(usagef("--derive needs --pk PATH"), "crypt4gh pubkey --sk KEY prints the public key instead")
	}
	if err := outfile.Distinct(e.stdout, []string{"--pk", pkPath}, keyInputs(o.keys())); err != nil {
		return err
	}
	out, err := openKeyFile(o, pkPath, false)
	if err != nil {
		return err
	}
	sk, _, err := existingKey(e, o, "--derive")
	if err != nil {
		out.Abort()
		return err
	}
	defer sk.Zero()
	_, err = out.Write(keys.MarshalPublicKey(sk.Public()))
	return out.Finish(err)
}

// keygenConvert writes an existing secret key of any format as a new
// crypt4gh secret key, and optionally its public key.
func keygenConvert(e *env, o *keygenOptions) error {
	out, pkPath := expandHome(o.Output), expandHome(o.PK)
	switch out {
	case "":
		return usagef("--convert needs -o PATH for the crypt4gh secret key")
	case "-":
		return usagef("--convert writes the secret key to a file, not to stdout")
	}
	if outfile.SameFile(o.keys().secretKeyPath(), out) {
		return withHint(usagef("-o %s is the secret key being converted", quoteName(out)), "use --relock to change a crypt4gh key in place")
	}
	files, err := openKeyOutputs(e, o, "-o", out, "--pk", pkPath, keyInputs(o.keys(), "--new-passphrase-file", o.NewPassphraseFile)...)
	if err != nil {
		return err
	}
	sk, info, err := existingKey(e, o, "--convert")
	if err != nil {
		files.Abort()
		return err
	}
	defer sk.Zero()
	data, err := marshalRelocked(e, o, sk, info)
	if err != nil {
		files.Abort()
		return err
	}
	defer clear(data)
	return files.write(data, keys.MarshalPublicKey(sk.Public()))
}

// keygenRelock rewrites a crypt4gh secret key with a new passphrase, KDF or
// comment. The new key is written to a temporary file that replaces the
// old one only once it is complete.
func keygenRelock(e *env, o *keygenOptions) error {
	if err := unusedWith(o, "--relock", "output"); err != nil {
		return withHint(err, "--relock rewrites --sk in place; use --convert -o PATH to write a new file")
	}
	if pk := o.PK; pk != "" && pk != os.Getenv(publicKeyEnv) {
		return withHint(usagef("--relock does not write a public key"), "the public key does not change; use --derive --pk PATH to write it")
	}
	path := o.keys().secretKeyPath()
	// Rewritten, the key would no longer hold the passphrase read from it.
	if err := outfile.Distinct(e.stdout, []string{"--sk", path}, keyInputs(keyOptions{PassphraseFile: o.PassphraseFile}, "--new-passphrase-file", o.NewPassphraseFile)); err != nil {
		return err
	}
	sk, info, err := existingKey(e, o, "--relock")
	if err != nil {
		return err
	}
	defer sk.Zero()
	if info.Format != keys.FormatCrypt4GH {
		return withHint(usagef("%s is a key in %s format; --relock rewrites only crypt4gh keys", quoteName(path), info.Format),
			"use --convert --sk %s -o NEW.sec to write it as a crypt4gh key; the original stays as it is", quoteName(path))
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return usagef("%s is not a regular file; refusing to rewrite it", quoteName(path))
	}
	data, err := marshalRelocked(e, o, sk, info)
	if err != nil {
		return err
	}
	defer clear(data)
	// Replace the file a symbolic link points to, not the link.
	out, err := outfile.Open(path, nil, outfile.Options{Force: true, Mode: outfile.ModeSecret, SecretKey: true})
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return out.Finish(err)
}

// unusedWith returns a usage error when one of the named flags is given
// with a mode that does not use it.
func unusedWith(o *keygenOptions, mode string, names ...string) error {
	for _, n := range names {
		if o.given[n] {
			return usagef("--%s has no effect with %s", n, mode)
		}
	}
	return nil
}

// existingKey reads the secret key that --sk names for one of the modes
// that work on an existing key, and describes its file.
func existingKey(e *env, o *keygenOptions, mode string) (*keys.SecretKey, keys.SecretKeyInfo, error) {
	if o.keys().secretKeyPath() == "" {
		return nil, keys.SecretKeyInfo{}, usagef("%s needs the existing secret key: use --sk PATH", mode)
	}
	return loadSecretKey(e, o.keys())
}

// marshalRelocked returns sk in crypt4gh format for --convert and --relock:
// protected with the new passphrase unless --nocrypt, with the KDF of
// --kdf or else of the original crypt4gh key (scrypt for other formats and
// for unprotected keys), and with the comment of -C or else the original
// one.
func marshalRelocked(e *env, o *keygenOptions, sk *keys.SecretKey, info keys.SecretKeyInfo) ([]byte, error) {
	kdf := keys.KDFNone
	var pass []byte
	if !o.NoCrypt {
		switch {
		case o.given["kdf"]:
			kdf, _ = kdfFlag(o.KDF)
		case info.Format == keys.FormatCrypt4GH && info.KDF != keys.KDFNone:
			kdf = info.KDF
		default:
			kdf = keys.KDFScrypt
		}
		var err error
		if pass, err = e.keyLoader().NewPassphrase(keyfile.Relock(o.NewPassphraseFile), "New passphrase for the secret key: "); err != nil {
			return nil, err
		}
		defer clear(pass)
		if pass == nil {
			kdf = keys.KDFNone
		}
	} else if err := unusedWith(o, "--nocrypt", "new-passphrase-file", "kdf"); err != nil {
		return nil, err
	}
	comment := info.Comment
	if o.given["comment"] {
		comment = o.Comment
	}
	return keys.MarshalSecretKey(sk, pass, kdf, comment, nil)
}
