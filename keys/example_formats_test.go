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
	// alice.sec.pem 7a05de6ac75ef95bebb39573da4b2940207d150582e88176a1d0ab7bd876f43e
	// bob.sec.pem   4696ef7dfbe7bbf93200a1540cfa485350a2b4b9339bba7fd95ed96ca5df5e31
	// carol.sec.pem b0a4096febd1b37a5924a7e473f189dc02a0d0de4e9df63b9c2801b7e8710b16
	// dave.sec.pem  656cfe2a675c2b921f048ce55fd9b25a0307398c42e1ffaa94a5e9b89cabe869
	// erin          1895bb4889dfd8d7bf5c5092892cc2405fe02c753e34a42d3ea2af58193aca74
	// frank         1a34ebf9349d89b4e10e4d64f96e4b1b11e2a5dd04b85cd47889647093d63b51
	// hank.sec.pem  070f35ce74b0d469f80424c3668e12e8206f681a17c53cd69f0a561aa4113712
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
