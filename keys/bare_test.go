package keys

import (
	"encoding/pem"
	"errors"
	"testing"
)

// TestBareSecretKey reads the key files that htslib-crypt4gh writes: the
// 32 bytes of the key under the crypt4gh label, never protected.
func TestBareSecretKey(t *testing.T) {
	sk, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	file := pem.EncodeToMemory(&pem.Block{Type: "CRYPT4GH PRIVATE KEY", Bytes: sk[:]})
	got, err := ParseSecretKey(file, nil)
	if err != nil || got != sk {
		t.Fatalf("ParseSecretKey: %v", err)
	}
	info, err := InspectSecretKey(file)
	if err != nil || info.Format != FormatBare || info.Protected || info.KDF != KDFNone {
		t.Errorf("InspectSecretKey: %+v, %v", info, err)
	}
	for name, b := range map[string][]byte{
		"all zeros": make([]byte, 32),
		"31 bytes":  sk[:31],
		"33 bytes":  append(sk[:], 0),
	} {
		file := pem.EncodeToMemory(&pem.Block{Type: "CRYPT4GH PRIVATE KEY", Bytes: b})
		if _, err := ParseSecretKey(file, nil); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another label with 32 bytes is not a bare key.
	file = pem.EncodeToMemory(&pem.Block{Type: "CRYPT4GH ENCRYPTED PRIVATE KEY", Bytes: sk[:]})
	if _, err := ParseSecretKey(file, nil); err == nil {
		t.Error("32 bytes under the encrypted label were read as a bare key")
	}
}
