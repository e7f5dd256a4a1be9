package keys

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// seedKeyFiles adds every key file of the test data to the corpus with its
// passphrase, and the protected ones with a wrong one too.
func seedKeyFiles(f *testing.F, add func(data []byte, pass string)) {
	for _, kf := range allKeyFiles(f) {
		data, err := os.ReadFile(kf.path)
		if err != nil {
			f.Fatal(err)
		}
		pass := ""
		if kf.pass != nil {
			pass = *kf.pass
		}
		add(data, pass)
		if kf.pass != nil {
			add(data, "wrong")
		}
	}
}

func checkKeyResult(t *testing.T, key [KeySize]byte, err error) {
	if err == nil && key == [KeySize]byte{} {
		t.Fatal("zero key without an error")
	}
	if err != nil && key != [KeySize]byte{} {
		t.Fatalf("key returned with error %v", err)
	}
	if err != nil && !errors.Is(err, ErrMalformedKey) && !errors.Is(err, ErrUnsupportedKey) &&
		!errors.Is(err, ErrWrongPassphrase) && !errors.Is(err, ErrPassphraseRequired) && !errors.Is(err, ErrMultipleKeys) {
		t.Fatalf("error %v wraps none of the sentinels", err)
	}
}

func FuzzParseSecretKey(f *testing.F) {
	seedKeyFiles(f, func(data []byte, pass string) { f.Add(data, pass) })
	f.Fuzz(func(t *testing.T, data []byte, pass string) {
		costly := costlyKDF(data)
		sk, err := ParseSecretKey(data, func() ([]byte, error) {
			if costly {
				return nil, ErrPassphraseRequired
			}
			return []byte(pass), nil
		})
		checkKeyResult(t, sk, err)
	})
}

// costlyKDF reports whether data is a protected key whose KDF would take
// more than a few milliseconds: scrypt, or more rounds than fuzzing can
// afford. The limits of the parser allow seconds to minutes of work per key
// (bcrypt at 1<<16 rounds, PBKDF2 at 1<<24 iterations), which would stall
// the fuzzer on one input; for such keys the fuzz target withholds the
// passphrase, so everything up to the KDF is still exercised. It tells the
// formats apart as the parser does, by content first.
func costlyKDF(data []byte) bool {
	kind, der, err := decodeSecretPEM(data)
	if err != nil {
		return false
	}
	switch kind {
	case secretC4GH:
		f, err := decodeC4GHSecret(der)
		switch {
		case err != nil || f.kdf == KDFNone:
			return false
		case f.kdf == KDFScrypt:
			return true
		}
		return f.kdf == KDFBcrypt && f.rounds > 4 || f.kdf == KDFPBKDF2 && f.rounds > 4096
	case secretOpenSSH:
		rest, ok := bytes.CutPrefix(der, []byte(sshMagic))
		_, rest, ok2 := string32(rest)
		_, rest, ok3 := string32(rest)
		opts, _, ok4 := string32(rest)
		_, opts, ok5 := string32(opts)
		rounds, _, ok6 := uint32BE(opts)
		return !ok || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || rounds > 4
	case secretEncryptedPKCS8:
		e, err := decodeEncryptedPKCS8(der)
		return err == nil && (e.kdf == KDFScrypt || e.iterations > 4096)
	}
	return false
}

// seedPublicKeyFiles adds every key file of the test data to the corpus,
// and the public ones concatenated, as a list of recipients.
func seedPublicKeyFiles(f *testing.F) {
	var all [][]byte
	seedKeyFiles(f, func(data []byte, pass string) {
		if pass != "wrong" {
			f.Add(data)
		}
		if pass == "" && !bytes.Contains(data, []byte("PRIVATE")) {
			all = append(all, data)
		}
	})
	f.Add(bytes.Join(all, nil))
	f.Add(bytes.Join(all, []byte("\r\n# comment\r\n\r\n")))
}

func FuzzParsePublicKey(f *testing.F) {
	seedPublicKeyFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pk, err := ParsePublicKey(data)
		checkKeyResult(t, pk, err)
	})
}

// FuzzParsePublicKeys checks that no key is zero, that errors wrap a
// sentinel and come without keys, that ParsePublicKey agrees (the only key,
// ErrMultipleKeys, or the same error), and that the keys written back as
// crypt4gh files and concatenated read as the same list.
func FuzzParsePublicKeys(f *testing.F) {
	seedPublicKeyFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pks, err := ParsePublicKeys(data)
		one, oneErr := ParsePublicKey(data)
		if err != nil {
			checkKeyResult(t, PublicKey{}, err)
			if pks != nil {
				t.Fatalf("keys returned with error %v", err)
			}
			if oneErr == nil || oneErr.Error() != err.Error() {
				t.Fatalf("ParsePublicKeys: %v; ParsePublicKey: %v", err, oneErr)
			}
			return
		}
		if len(pks) == 0 {
			t.Fatal("no keys and no error")
		}
		var again []byte
		for _, pk := range pks {
			checkKeyResult(t, pk, nil)
			again = append(again, MarshalPublicKey(pk)...)
		}
		switch {
		case len(pks) == 1 && (oneErr != nil || one != pks[0]):
			t.Fatalf("ParsePublicKey: %v, %v; ParsePublicKeys: %v", one, oneErr, pks)
		case len(pks) > 1 && !errors.Is(oneErr, ErrMultipleKeys):
			t.Fatalf("ParsePublicKey of %d keys: %v", len(pks), oneErr)
		}
		back, err := ParsePublicKeys(again)
		if err != nil || !equalKeys(back, pks) {
			t.Fatalf("written back: %v, %v; want %v", back, err, pks)
		}
	})
}

// FuzzInspectSecretKey checks InspectSecretKey against ParseSecretKey
// without a passphrase: it must not refuse a file that ParseSecretKey
// reads, and it must say that a key is protected exactly when
// ParseSecretKey asks for a passphrase.
func FuzzInspectSecretKey(f *testing.F) {
	seedKeyFiles(f, func(data []byte, pass string) {
		if pass != "wrong" {
			f.Add(data)
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := InspectSecretKey(data)
		sk, perr := ParseSecretKey(data, nil)
		defer sk.Zero()
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) && !errors.Is(err, ErrUnsupportedKey) {
				t.Fatalf("error %v wraps none of the sentinels", err)
			}
			if perr == nil {
				t.Fatalf("InspectSecretKey refuses a key that ParseSecretKey reads: %v", err)
			}
			return
		}
		if perr == nil && info.Protected {
			t.Fatalf("%+v: protected, but ParseSecretKey read it without a passphrase", info)
		}
		if errors.Is(perr, ErrPassphraseRequired) && !info.Protected {
			t.Fatalf("%+v: not protected, but ParseSecretKey asks for a passphrase", info)
		}
	})
}
