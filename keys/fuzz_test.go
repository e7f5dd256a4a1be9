package keys

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// seedKeyFiles adds every key file of the test data to the corpus with its
// passphrase, and the interop keys with a wrong one too.
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
		if kf.pass != nil && strings.HasPrefix(kf.path, interopDir) {
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
		!errors.Is(err, ErrWrongPassphrase) && !errors.Is(err, ErrPassphraseRequired) {
		t.Fatalf("error %v wraps none of the sentinels", err)
	}
}

func FuzzParseSecretKey(f *testing.F) {
	seedKeyFiles(f, func(data []byte, pass string) { f.Add(data, pass) })
	f.Fuzz(func(t *testing.T, data []byte, pass string) {
		sk, err := ParseSecretKey(data, func() ([]byte, error) { return []byte(pass), nil })
		checkKeyResult(t, sk, err)
	})
}

func FuzzParsePublicKey(f *testing.F) {
	seedKeyFiles(f, func(data []byte, pass string) {
		if pass != "wrong" {
			f.Add(data)
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		pk, err := ParsePublicKey(data)
		checkKeyResult(t, pk, err)
	})
}
