package keys

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

const sshKeysDir = "../testdata/keys"

// sshTestKeys are the ed25519 keys that ssh-keygen made for these tests
// (testdata/keys/README.md).
var sshTestKeys = []struct {
	file, pass string
	xcrypto    bool // golang.org/x/crypto/ssh can decrypt it too
}{
	{"ssh_ed25519_aes128ctr", "pass aes128-ctr", false},
	{"ssh_ed25519_aes192ctr", "pass aes192-ctr", false},
	{"ssh_ed25519_aes256ctr", "pass aes256-ctr", true},
	{"ssh_ed25519_aes128cbc", "pass aes128-cbc", false},
	{"ssh_ed25519_aes192cbc", "pass aes192-cbc", false},
	{"ssh_ed25519_aes256cbc", "pass aes256-cbc", true},
	{"ssh_ed25519_aes128gcm", "pass aes128-gcm@openssh.com", false},
	{"ssh_ed25519_aes256gcm", "pass aes256-gcm@openssh.com", false},
	{"ssh_ed25519_chacha20poly1305", "pass chacha20-poly1305@openssh.com", false},
	{"ssh_ed25519_plain", "", true},
}

// TestSSHKeygenKeys parses the keys that ssh-keygen encrypted with every
// cipher it offers and checks them against the public key line that
// ssh-keygen wrote, against golang.org/x/crypto/ssh where it can read
// the key, and that a wrong passphrase is reported as such.
func TestSSHKeygenKeys(t *testing.T) {
	for _, c := range sshTestKeys {
		t.Run(c.file, func(t *testing.T) {
			data := readFile(t, filepath.Join(sshKeysDir, c.file))
			skipBcryptUnderRace(t, usesBcrypt(data) && c.file != "ssh_ed25519_aes256ctr")
			pubLine := readFile(t, filepath.Join(sshKeysDir, c.file+".pub"))
			var pass func() ([]byte, error)
			if c.pass != "" {
				pass = constPass(c.pass)
			}
			sk, err := ParseSecretKey(data, pass)
			if err != nil {
				t.Fatalf("ParseSecretKey: %v", err)
			}
			pk, err := ParsePublicKey(pubLine)
			if err != nil {
				t.Fatalf("ParsePublicKey: %v", err)
			}
			if sk.Public() != pk {
				t.Errorf("secret key gives public key %s, the .pub line %s", sk.Public(), pk)
			}

			// The same ed25519 key through x/crypto/ssh, converted by us.
			sshPub, _, _, _, err := ssh.ParseAuthorizedKey(pubLine)
			if err != nil {
				t.Fatal(err)
			}
			edPub := ed25519.PublicKey(sshPub.(ssh.CryptoPublicKey).CryptoPublicKey().(ed25519.PublicKey))
			if conv, err := Ed25519PublicToX25519(edPub); err != nil || conv != pk {
				t.Errorf("x/crypto/ssh public key converts to %s, %v; want %s", conv, err, pk)
			}
			if c.xcrypto {
				var raw any
				if c.pass == "" {
					raw, err = ssh.ParseRawPrivateKey(data)
				} else {
					raw, err = ssh.ParseRawPrivateKeyWithPassphrase(data, []byte(c.pass))
				}
				if err != nil {
					t.Fatalf("x/crypto/ssh: %v", err)
				}
				edPriv := *raw.(*ed25519.PrivateKey)
				if Ed25519SecretToX25519(edPriv) != sk {
					t.Errorf("x/crypto/ssh's ed25519 key converts to another X25519 key")
				}
			}

			if c.pass != "" {
				_, err := ParseSecretKey(data, constPass(c.pass[:len(c.pass)-1]))
				if !errors.Is(err, ErrWrongPassphrase) {
					t.Errorf("wrong passphrase: got %v", err)
				}
				if _, err := ParseSecretKey(data, constPass("")); !errors.Is(err, ErrWrongPassphrase) {
					t.Errorf("empty passphrase: got %v", err)
				}
			}
		})
	}
}

// TestSSHUnsupported checks that keys ssh-keygen writes but this package
// does not support are refused with their name.
func TestSSHUnsupported(t *testing.T) {
	tests := []struct {
		file   string
		secret bool
		name   string
	}{
		{"ssh_ecdsa_plain", true, "ecdsa-sha2-nistp256"},
		{"ssh_ecdsa_plain.pub", false, "ecdsa-sha2-nistp256"},
		{"ssh_rsa_plain", true, "ssh-rsa"},
		{"ssh_rsa_plain.pub", false, "ssh-rsa"},
		{"ssh_ed25519_3descbc", true, "3des-cbc"},
	}
	for _, tc := range tests {
		data := readFile(t, filepath.Join(sshKeysDir, tc.file))
		var err error
		if tc.secret {
			_, err = ParseSecretKey(data, noPassphrase(t))
		} else {
			_, err = ParsePublicKey(data)
		}
		if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: got %v, want ErrUnsupportedKey naming %q", tc.file, err, tc.name)
		}
	}
}
