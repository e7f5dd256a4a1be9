package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "generate a crypt4gh key pair",
		Description: "Writes a new X25519 key pair in crypt4gh format. The secret key is protected\n" +
			"with a passphrase, asked twice on the terminal or taken from C4GH_PASSPHRASE,\n" +
			"unless --nocrypt is given. It is created with mode 0600.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sk", Usage: "write the secret key to `PATH`", EnvVars: []string{"C4GH_SECRET_KEY"}},
			&cli.StringFlag{Name: "pk", Usage: "write the public key to `PATH`", EnvVars: []string{"C4GH_PUBLIC_KEY"}},
			&cli.StringFlag{Name: "comment", Aliases: []string{"C"}, Usage: "store `TEXT` in clear in the secret key"},
			&cli.BoolFlag{Name: "nocrypt", Usage: "do not protect the secret key with a passphrase"},
			&cli.StringFlag{Name: "kdf", Value: string(keys.KDFScrypt), Usage: "passphrase KDF: scrypt, bcrypt or pbkdf2_hmac_sha256"},
			passphraseFileFlag,
			forceFlag,
		},
		Action: keygen,
	}
}

func keygen(c *cli.Context) error {
	skPath, pkPath := c.String("sk"), c.String("pk")
	if skPath == "" || pkPath == "" {
		return usagef("keygen needs --sk PATH and --pk PATH")
	}
	if c.NArg() > 0 {
		return usagef("unexpected argument %q", c.Args().First())
	}
	kdf := keys.KDF(c.String("kdf"))
	switch kdf {
	case keys.KDFScrypt, keys.KDFBcrypt, keys.KDFPBKDF2:
	default:
		return usagef("unknown --kdf %q: use scrypt, bcrypt or pbkdf2_hmac_sha256", kdf)
	}
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
	if err := writeNew(skPath, skData, 0o600, c.Bool("force")); err != nil {
		return err
	}
	return writeNew(pkPath, keys.MarshalPublicKey(sk.Public()), 0o644, c.Bool("force"))
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
