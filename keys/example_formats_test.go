package keys_test

import (
	"fmt"
	"log"
	"os"

	"github.com/c4gh-go/crypt4gh/keys"
)

// Read a secret key of each supported format and print the X25519 public
// key it stands for. The passphrase function is called only for the
// protected keys.
func ExampleParseSecretKey_formats() {
	for _, k := range []struct{ file, passphrase string }{
		{"alice.sec.pem", "alice-A-scrypt"}, // crypt4gh, scrypt
		{"bob.sec.pem", "bob A bcrypt"},     // crypt4gh, bcrypt
		{"carol.sec.pem", "carol-A-pbkdf2"}, // crypt4gh, PBKDF2
		{"dave.sec.pem", ""},                // crypt4gh, no passphrase
		{"erin", ""},                        // OpenSSH ed25519
		{"frank", "frank-A-ssh"},            // OpenSSH ed25519, encrypted
		{"hank.sec.pem", ""},                // PKCS#8 X25519
	} {
		data, err := os.ReadFile("../testdata/interop/keys/" + k.file)
		if err != nil {
			log.Fatal(err)
		}
		sk, err := keys.ParseSecretKey(data, func() ([]byte, error) { return []byte(k.passphrase), nil })
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-13s %s\n", k.file, sk.Public())
		sk.Zero()
	}
	// Output:
	// alice.sec.pem egXeasde+Vvrs5Vz2kspQCB9FQWC6IF2odCre9h29D4=
	// bob.sec.pem   Rpbvffvnu/kyAKFUDPpIU1CitLkzm7p/2V7ZbKXfXjE=
	// carol.sec.pem sKQJb+vRs3pZJKfkc/GJ3AKg0N5OnfY7nCgBt+hxCxY=
	// dave.sec.pem  ZWz+KmdcK5IfBIzlX9myWgMHOYxC4f+qlKXpuJyr6Gk=
	// erin          GJW7SInf2Ne/XFCSiSzCQF/gLHU+NKQtPqKvWBk6ynQ=
	// frank         GjTr+TSdibThDk1k+W5LGxHipd0EuFzUeIlkcJPWO1E=
	// hank.sec.pem  Bw81znSw1Gn4BCTDZo4S6CBvaBoXxTzWnwpWGqQRNxI=
}

// Find out how a secret key file is protected, and its comment, before
// asking for a passphrase.
func ExampleInspectSecretKey() {
	for _, file := range []string{"alice.sec.pem", "dave.sec.pem", "erin", "frank", "hank.sec.pem"} {
		data, err := os.ReadFile("../testdata/interop/keys/" + file)
		if err != nil {
			log.Fatal(err)
		}
		info, err := keys.InspectSecretKey(data)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-13s %-8s protected=%-5v kdf=%-6s comment=%q\n", file, info.Format, info.Protected, info.KDF, info.Comment)
	}
	// Output:
	// alice.sec.pem crypt4gh protected=true  kdf=scrypt comment="alice@setA"
	// dave.sec.pem  crypt4gh protected=false kdf=none   comment="dave@setA (unencrypted)"
	// erin          openssh  protected=false kdf=none   comment="erin@setA"
	// frank         openssh  protected=true  kdf=bcrypt comment=""
	// hank.sec.pem  pkcs8    protected=false kdf=none   comment=""
}
