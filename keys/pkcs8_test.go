package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// opensslKeys are the encrypted PKCS#8 keys that openssl made for these
// tests (testdata/keys/README.md), with the PKIX public key that openssl
// wrote for each.
var opensslKeys = []struct {
	file, pass, pub string
	kdf             KDF
}{
	{"pkcs8_x25519_sha256_aes256cbc", "pass pkcs8 sha256", "pkcs8_x25519_sha256_aes256cbc.pub", KDFPBKDF2},
	{"pkcs8_x25519_sha1_aes128cbc", "pass pkcs8 sha1", "pkcs8_x25519_topk8.pub", KDFPBKDF2},
	{"pkcs8_x25519_sha512_aes192cbc", "pass pkcs8 sha512", "pkcs8_x25519_topk8.pub", KDFPBKDF2},
	{"pkcs8_x25519_scrypt_aes256cbc", "pass pkcs8 scrypt", "pkcs8_x25519_topk8.pub", KDFScrypt},
}

// relabelledKeys are real crypt4gh and OpenSSH keys under the label
// "ENCRYPTED PRIVATE KEY", and the public keys of the files they were made
// from.
var relabelledKeys = []struct {
	file, pass, pub string
	info            SecretKeyInfo
	comment         *string
}{
	{"c4gh_bcrypt_relabelled", "bob A bcrypt", filepath.Join(interopDir, "keys/bob.pub.pem"),
		SecretKeyInfo{Format: FormatCrypt4GH, Protected: true, KDF: KDFBcrypt, Comment: "bob@setA"}, ptr("bob@setA")},
	{"c4gh_scrypt_relabelled", "alice-A-scrypt", filepath.Join(interopDir, "keys/alice.pub.pem"),
		SecretKeyInfo{Format: FormatCrypt4GH, Protected: true, KDF: KDFScrypt, Comment: "alice@setA"}, ptr("alice@setA")},
	{"ssh_ed25519_aes256ctr_relabelled", "pass aes256-ctr", filepath.Join(sshKeysDir, "ssh_ed25519_aes256ctr.pub"),
		SecretKeyInfo{Format: FormatOpenSSH, Protected: true, KDF: KDFBcrypt}, nil},
}

func ptr(s string) *string { return &s }

// newFormatKeyFiles lists the openssl and relabelled keys for allKeyFiles.
func newFormatKeyFiles() []keyFile {
	var files []keyFile
	for _, k := range opensslKeys {
		files = append(files, keyFile{path: filepath.Join(sshKeysDir, k.file), secret: true, pass: ptr(k.pass)},
			keyFile{path: filepath.Join(sshKeysDir, k.pub)})
	}
	for _, k := range relabelledKeys {
		files = append(files, keyFile{path: filepath.Join(sshKeysDir, k.file), secret: true, pass: ptr(k.pass), comment: k.comment})
	}
	return files
}

// TestOpenSSLKeys reads the encrypted PKCS#8 keys that openssl wrote and
// checks them against the public key that openssl wrote with them, and
// that a wrong or missing passphrase is reported as such.
func TestOpenSSLKeys(t *testing.T) {
	for _, k := range opensslKeys {
		t.Run(k.file, func(t *testing.T) {
			data := readFile(t, filepath.Join(sshKeysDir, k.file))
			checkEncryptedPKCS8(t, data, k.pass, readFile(t, filepath.Join(sshKeysDir, k.pub)), k.kdf)
		})
	}
}

// checkEncryptedPKCS8 checks that data, an encrypted PKCS#8 X25519 key,
// opens with pass and gives the public key in pubPEM, that InspectSecretKey
// describes it, and that a wrong or missing passphrase is reported as such.
func checkEncryptedPKCS8(t *testing.T, data []byte, pass string, pubPEM []byte, kdf KDF) {
	t.Helper()
	calls := 0
	sk, err := ParseSecretKey(data, func() ([]byte, error) { calls++; return []byte(pass), nil })
	if err != nil {
		t.Fatalf("ParseSecretKey: %v", err)
	}
	if calls != 1 {
		t.Errorf("passphrase asked %d times, want 1", calls)
	}
	pk, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	if sk.Public() != pk {
		t.Errorf("secret key gives public key %s, openssl wrote %s", sk.Public(), pk)
	}
	info, err := InspectSecretKey(data)
	if want := (SecretKeyInfo{Format: FormatPKCS8, Protected: true, KDF: kdf}); err != nil || info != want {
		t.Errorf("InspectSecretKey: %+v, %v; want %+v", info, err, want)
	}
	wrongs := []string{pass + "x", "", strings.ToUpper(pass)}
	if kdf == KDFScrypt {
		wrongs = wrongs[:1] // 50 ms each, a second under -race
	}
	for _, wrong := range wrongs {
		sk, err := ParseSecretKey(data, constPass(wrong))
		if !errors.Is(err, ErrWrongPassphrase) || sk != (SecretKey{}) {
			t.Errorf("passphrase %q: got %v, want ErrWrongPassphrase", wrong, err)
		}
		if err != nil && !strings.Contains(err.Error(), "wrong passphrase") {
			t.Errorf("message %q does not say wrong passphrase", err)
		}
	}
	if _, err := ParseSecretKey(data, nil); !errors.Is(err, ErrPassphraseRequired) {
		t.Errorf("nil passphrase function: got %v, want ErrPassphraseRequired", err)
	}
}

// TestOpenSSLUnsupported checks that the openssl keys this package does not
// read are refused with a name for what they hold, and that the passphrase
// is asked for only when the file cannot be judged without it.
func TestOpenSSLUnsupported(t *testing.T) {
	for _, tc := range []struct {
		file, pass string
		names      string
		askPass    bool // the key type is inside the encryption
	}{
		{"pkcs8_x25519_sha256_des3", "pass pkcs8 sha256", "DES-EDE3-CBC", false},
		{"pkcs8_x25519_pbes1_3des", "pass pkcs8 pbes1", "PKCS#12 pbeWithSHAAnd3-KeyTripleDES-CBC", false},
		{"rsa_traditional_aes256", "pass traditional", "OpenSSL's traditional PEM encryption", false},
		{"pkcs8_ed25519_sha256_aes256cbc", "pass pkcs8 ed25519", "Ed25519", true},
		{"pkcs8_rsa_sha256_aes256cbc", "pass pkcs8 rsa", "RSA", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := readFile(t, filepath.Join(sshKeysDir, tc.file))
			calls := 0
			sk, err := ParseSecretKey(data, func() ([]byte, error) { calls++; return []byte(tc.pass), nil })
			if !errors.Is(err, ErrUnsupportedKey) || sk != (SecretKey{}) {
				t.Fatalf("got %v, want ErrUnsupportedKey", err)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error %q does not name %q", err, tc.names)
			}
			if want := map[bool]int{false: 0, true: 1}[tc.askPass]; calls != want {
				t.Errorf("passphrase asked %d times, want %d", calls, want)
			}
			info, err := InspectSecretKey(data)
			switch {
			case tc.askPass && (err != nil || !info.Protected || info.Format != FormatPKCS8):
				t.Errorf("InspectSecretKey: %+v, %v; want a protected PKCS#8 key", info, err)
			case !tc.askPass && !errors.Is(err, ErrUnsupportedKey):
				t.Errorf("InspectSecretKey: %v, want ErrUnsupportedKey", err)
			}
		})
	}
}

// TestOpenSSLFresh has the installed openssl encrypt new X25519 keys with
// every cipher and KDF it offers for PKCS#8 that this package reads, and
// with some that it does not.
func TestOpenSSLFresh(t *testing.T) {
	openssl := clitest.Tool(t, "openssl")
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	plain := filepath.Join(dir, "plain.pem")
	pub := filepath.Join(dir, "plain.pub")
	run("genpkey", "-algorithm", "X25519", "-out", plain)
	run("pkey", "-in", plain, "-pubout", "-out", pub)
	pubPEM := readFile(t, pub)
	const pass = "fresh pässwörd"

	for i, tc := range []struct {
		args []string
		kdf  KDF
	}{
		{[]string{"genpkey", "-algorithm", "X25519", "-aes-128-cbc"}, KDFPBKDF2},
		{[]string{"genpkey", "-algorithm", "X25519", "-aes-192-cbc"}, KDFPBKDF2},
		{[]string{"genpkey", "-algorithm", "X25519", "-aes-256-cbc"}, KDFPBKDF2},
		{[]string{"pkcs8", "-topk8"}, KDFPBKDF2},
		{[]string{"pkcs8", "-topk8", "-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1", "-iter", "1"}, KDFPBKDF2},
		{[]string{"pkcs8", "-topk8", "-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA224"}, KDFPBKDF2},
		{[]string{"pkcs8", "-topk8", "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA384", "-iter", "5000"}, KDFPBKDF2},
		{[]string{"pkcs8", "-topk8", "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA512"}, KDFPBKDF2},
		// openssl's default scrypt (N=2^14) is pkcs8_x25519_scrypt_aes256cbc.
		{[]string{"pkcs8", "-topk8", "-scrypt", "-scrypt_N", "1024", "-scrypt_r", "4", "-scrypt_p", "3", "-v2", "aes-128-cbc"}, KDFScrypt},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("key%d.pem", i))
			args := append(tc.args, "-out", out)
			if tc.args[0] == "genpkey" {
				// A new key: its public key is written from it.
				args = append(args, "-pass", "pass:"+pass)
				run(args...)
				run("pkey", "-in", out, "-passin", "pass:"+pass, "-pubout", "-out", out+".pub")
				checkEncryptedPKCS8(t, readFile(t, out), pass, readFile(t, out+".pub"), tc.kdf)
				return
			}
			args = append(args, "-in", plain, "-passout", "pass:"+pass)
			run(args...)
			checkEncryptedPKCS8(t, readFile(t, out), pass, pubPEM, tc.kdf)
		})
	}

	for i, tc := range []struct {
		args  []string
		names string
	}{
		{[]string{"-v2", "des3"}, "DES-EDE3-CBC"},
		{[]string{"-v2", "camellia-256-cbc"}, "Camellia-256-CBC"},
		{[]string{"-v2", "aes-256-ofb"}, "2.16.840.1.101.3.4.1.43"},
		{[]string{"-v1", "PBE-SHA1-3DES"}, "PKCS#12 pbeWithSHAAnd3-KeyTripleDES-CBC"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("unsupported%d.pem", i))
			run(append([]string{"pkcs8", "-topk8", "-in", plain, "-passout", "pass:x", "-out", out}, tc.args...)...)
			_, err := ParseSecretKey(readFile(t, out), noPassphrase(t))
			if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), tc.names) {
				t.Errorf("got %v, want ErrUnsupportedKey naming %q", err, tc.names)
			}
		})
	}
}

// TestRelabelledKeys reads crypt4gh and OpenSSH keys under labels other
// than their own: the committed vectors (protected keys made from the
// interop and ssh-keygen keys) and unprotected keys relabelled here under
// every label.
func TestRelabelledKeys(t *testing.T) {
	for _, k := range relabelledKeys {
		t.Run(k.file, func(t *testing.T) {
			data := readFile(t, filepath.Join(sshKeysDir, k.file))
			if block, _ := pem.Decode(data); block == nil || block.Type != pemEncryptedPKCS8 {
				t.Fatalf("%s is not labelled %q", k.file, pemEncryptedPKCS8)
			}
			info, err := InspectSecretKey(data)
			if err != nil || info != k.info {
				t.Errorf("InspectSecretKey: %+v, %v; want %+v", info, err, k.info)
			}
			// TestSSHKeygenKeys and TestInteropKeys open the originals under -race.
			skipBcryptUnderRace(t, k.info.KDF == KDFBcrypt)
			want, err := ParsePublicKey(readFile(t, k.pub))
			if err != nil {
				t.Fatal(err)
			}
			sk, err := ParseSecretKey(data, constPass(k.pass))
			if err != nil || sk.Public() != want {
				t.Errorf("ParseSecretKey: %v; want the key of %s", err, k.pub)
			}
			if _, err := ParseSecretKey(data, constPass(k.pass+"x")); !errors.Is(err, ErrWrongPassphrase) {
				t.Errorf("wrong passphrase: got %v, want ErrWrongPassphrase", err)
			}
			if _, err := ParsePublicKey(data); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "holds a secret key") {
				t.Errorf("ParsePublicKey: got %v, want an error saying it holds a secret key", err)
			}
		})
	}

	sk, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	c4ghNone, err := MarshalSecretKey(&sk, nil, KDFNone, "relabelled", nil)
	if err != nil {
		t.Fatal(err)
	}
	ssh, sshPriv := newSSHKey(9)
	for _, tc := range []struct {
		name   string
		data   []byte
		want   SecretKey
		format SecretKeyFormat
	}{
		{"crypt4gh none", c4ghNone, sk, FormatCrypt4GH},
		{"openssh", ssh.encode(), Ed25519SecretToX25519(sshPriv), FormatOpenSSH},
	} {
		block, _ := pem.Decode(tc.data)
		for _, label := range []string{pemEncryptedPKCS8, pemPKCS8, pemC4GHPrivate, pemC4GHEncryptedPrivate,
			pemOpenSSH, pemPKIX, pemC4GHPublic, "RSA PRIVATE KEY", "KEY"} {
			data := armored(label, block.Bytes) // also rewraps the base64 at 64 columns
			got, err := ParseSecretKey(data, noPassphrase(t))
			if err != nil || got != tc.want {
				t.Errorf("%s as %q: %v", tc.name, label, err)
			}
			if info, err := InspectSecretKey(data); err != nil || info.Format != tc.format {
				t.Errorf("%s as %q: InspectSecretKey %+v, %v", tc.name, label, info, err)
			}
			if _, err := ParsePublicKey(data); !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "holds a secret key") {
				t.Errorf("%s as %q: ParsePublicKey: got %v, want an error saying it holds a secret key", tc.name, label, err)
			}
		}
	}
}

// pbes2File builds an encrypted PKCS#8 file piece by piece, to damage it.
type pbes2File struct {
	scheme     asn1.ObjectIdentifier // PBES2 unless set
	kdf        asn1.ObjectIdentifier
	kdfParams  any
	cipher     asn1.ObjectIdentifier
	iv         any // marshalled as the cipher parameters
	ciphertext []byte
	tail       []byte // after the EncryptedPrivateKeyInfo
}

type testPBKDF2Params struct {
	Salt       any
	Iterations int64
	KeyLength  int64                    `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

type testScryptParams struct {
	Salt      []byte
	N, R, P   int64
	KeyLength int64 `asn1:"optional"`
}

var (
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f pbes2File) encode(t *testing.T) []byte {
	t.Helper()
	scheme := f.scheme
	if scheme == nil {
		scheme = oidPBES2
	}
	params := struct{ KDF, Cipher pkix.AlgorithmIdentifier }{
		pkix.AlgorithmIdentifier{Algorithm: f.kdf, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, f.kdfParams)}},
		pkix.AlgorithmIdentifier{Algorithm: f.cipher, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, f.iv)}},
	}
	info := struct {
		Algorithm     pkix.AlgorithmIdentifier
		EncryptedData []byte
	}{pkix.AlgorithmIdentifier{Algorithm: scheme, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, params)}}, f.ciphertext}
	return armored(pemEncryptedPKCS8, append(mustMarshal(t, info), f.tail...))
}

// sealPBKDF2 returns a file that holds plain (padded by the caller)
// encrypted with AES-128-CBC under PBKDF2-HMAC-SHA256 of pass, with the
// given iterations.
func sealPBKDF2(t *testing.T, pass string, iterations int, plain []byte) pbes2File {
	t.Helper()
	salt, iv := []byte("saltsalt"), bytes.Repeat([]byte{0x1f}, 16)
	key, err := pbkdf2.Key(sha256.New, pass, salt, iterations, 16)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	ct := bytes.Clone(plain)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, ct)
	return pbes2File{
		kdf: oidPBKDF2,
		kdfParams: testPBKDF2Params{Salt: salt, Iterations: int64(iterations),
			PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}},
		cipher: oidAES128CBC, iv: iv, ciphertext: ct,
	}
}

func pkcs7(b []byte) []byte {
	n := 16 - len(b)%16
	return append(bytes.Clone(b), bytes.Repeat([]byte{byte(n)}, n)...)
}

// TestEncryptedPKCS8Damaged builds encrypted PKCS#8 files with every
// parameter wrong in turn, and files whose decryption gives bad padding or
// bad DER, and checks the class of the error, its wording, and that the
// passphrase is not asked for when the structure is at fault.
func TestEncryptedPKCS8Damaged(t *testing.T) {
	priv, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, edPriv, _ := ed25519.GenerateKey(nil)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	zeroDER := bytes.Clone(der)
	clear(zeroDER[len(zeroDER)-32:])

	good := sealPBKDF2(t, "pw", 1, pkcs7(der))
	if sk, err := ParseSecretKey(good.encode(t), constPass("pw")); err != nil || !bytes.Equal(sk[:], priv.Bytes()) {
		t.Fatalf("hand-made encrypted PKCS#8 key: %v", err)
	}
	mod := func(f func(*pbes2File)) pbes2File { p := good; f(&p); return p }
	pbkdf2With := func(f func(*testPBKDF2Params)) pbes2File {
		p := good.kdfParams.(testPBKDF2Params)
		f(&p)
		return mod(func(g *pbes2File) { g.kdfParams = p })
	}
	scryptWith := func(n, r, p int64) pbes2File {
		return mod(func(g *pbes2File) {
			g.kdf, g.kdfParams = oidScrypt, testScryptParams{Salt: []byte("salt"), N: n, R: r, P: p}
		})
	}

	for _, tc := range []struct {
		name  string
		file  pbes2File
		want  error
		names string
	}{
		{"PBES1", mod(func(f *pbes2File) { f.scheme = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 10} }), ErrUnsupportedKey, "pbeWithSHA1AndDES-CBC"},
		{"unknown scheme", mod(func(f *pbes2File) { f.scheme = asn1.ObjectIdentifier{1, 2, 3, 4} }), ErrUnsupportedKey, "1.2.3.4"},
		{"unknown KDF", mod(func(f *pbes2File) { f.kdf = asn1.ObjectIdentifier{1, 2, 3} }), ErrUnsupportedKey, "KDF 1.2.3"},
		{"unknown cipher", mod(func(f *pbes2File) { f.cipher = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 7} }), ErrUnsupportedKey, "DES-CBC"},
		{"AES-GCM", mod(func(f *pbes2File) { f.cipher = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 46} }), ErrUnsupportedKey, "AES-256-GCM"},
		{"unknown PRF", pbkdf2With(func(p *testPBKDF2Params) {
			p.PRF.Algorithm = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}
		}), ErrUnsupportedKey, "HMAC-MD5"},
		{"salt from another source", pbkdf2With(func(p *testPBKDF2Params) {
			p.Salt = pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 3}}
		}), ErrUnsupportedKey, "salt"},
		{"0 iterations", pbkdf2With(func(p *testPBKDF2Params) { p.Iterations = 0 }), ErrMalformedKey, ""},
		{"negative iterations", pbkdf2With(func(p *testPBKDF2Params) { p.Iterations = -5 }), ErrMalformedKey, ""},
		{"iterations over the limit", pbkdf2With(func(p *testPBKDF2Params) { p.Iterations = maxPKCS8Iterations + 1 }), ErrUnsupportedKey, "limit"},
		{"2^62 iterations", pbkdf2With(func(p *testPBKDF2Params) { p.Iterations = 1 << 62 }), ErrUnsupportedKey, "limit"},
		{"key length for another cipher", pbkdf2With(func(p *testPBKDF2Params) { p.KeyLength = 32 }), ErrMalformedKey, ""},
		{"negative key length", pbkdf2With(func(p *testPBKDF2Params) { p.KeyLength = -16 }), ErrMalformedKey, ""},
		{"PBKDF2 parameters not a SEQUENCE", mod(func(f *pbes2File) { f.kdfParams = 7 }), ErrMalformedKey, ""},
		{"scrypt N not a power of 2", scryptWith(1000, 8, 1), ErrMalformedKey, ""},
		{"scrypt N=1", scryptWith(1, 8, 1), ErrMalformedKey, ""},
		{"scrypt r=0", scryptWith(1024, 0, 1), ErrMalformedKey, ""},
		{"scrypt memory over the limit", scryptWith(1<<20, 8, 1), ErrUnsupportedKey, "limits"},
		{"scrypt work over the limit", scryptWith(1<<14, 8, 1<<8), ErrUnsupportedKey, "limits"},
		{"scrypt N=2^62", scryptWith(1<<62, 1<<40, 1<<60), ErrUnsupportedKey, "limits"},
		{"scrypt p=2^62", scryptWith(1<<14, 8, 1<<62), ErrUnsupportedKey, "limits"},
		{"IV of 8 bytes", mod(func(f *pbes2File) { f.iv = make([]byte, 8) }), ErrMalformedKey, ""},
		{"IV not an OCTET STRING", mod(func(f *pbes2File) { f.iv = 16 }), ErrMalformedKey, ""},
		{"empty ciphertext", mod(func(f *pbes2File) { f.ciphertext = nil }), ErrMalformedKey, ""},
		{"ciphertext not whole blocks", mod(func(f *pbes2File) { f.ciphertext = f.ciphertext[:len(f.ciphertext)-1] }), ErrMalformedKey, ""},
		{"trailing data", mod(func(f *pbes2File) { f.tail = []byte{0} }), ErrMalformedKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.file.encode(t)
			for fn, parse := range map[string]func() error{
				"ParseSecretKey":   func() error { _, err := ParseSecretKey(data, noPassphrase(t)); return err },
				"InspectSecretKey": func() error { _, err := InspectSecretKey(data); return err },
			} {
				err := parse()
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: got %v, want %v", fn, err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.names) {
					t.Errorf("%s: error %q does not name %q", fn, err, tc.names)
				}
			}
		})
	}

	// Files that decrypt with the right passphrase to what a wrong
	// passphrase would give, or to a key of another kind.
	badPad := pkcs7(der)
	badPad[len(badPad)-2] ^= 1
	for _, tc := range []struct {
		name  string
		plain []byte
		want  error
		names string
	}{
		{"padding 0", append(bytes.Clone(der), make([]byte, 16)...), ErrWrongPassphrase, "wrong passphrase"},
		{"padding 17", append(bytes.Clone(der), bytes.Repeat([]byte{17}, 16)...), ErrWrongPassphrase, "wrong passphrase"},
		{"padding bytes differ", badPad, ErrWrongPassphrase, "wrong passphrase"},
		{"padding right, not DER", pkcs7(bytes.Repeat([]byte{0x42}, 40)), ErrWrongPassphrase, "wrong passphrase"},
		{"DER with trailing bytes", pkcs7(append(bytes.Clone(der), 0, 0)), ErrWrongPassphrase, "wrong passphrase"},
		{"DER cut short", pkcs7(der[:len(der)-1]), ErrWrongPassphrase, "wrong passphrase"},
		{"Ed25519 key", pkcs7(edDER), ErrUnsupportedKey, "Ed25519"},
		{"all-zero X25519 key", pkcs7(zeroDER), ErrMalformedKey, "zeros"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sk, err := ParseSecretKey(sealPBKDF2(t, "pw", 1, tc.plain).encode(t), constPass("pw"))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.names) {
				t.Errorf("got %v, want %v naming %q", err, tc.want, tc.names)
			}
			if sk != (SecretKey{}) {
				t.Errorf("key returned with an error")
			}
		})
	}

	// Many wrong passphrases: about 1 in 256 gives valid padding by chance,
	// and must still be reported as a wrong passphrase, not as damage.
	data := good.encode(t)
	for i := range 2000 {
		if _, err := ParseSecretKey(data, constPass(fmt.Sprint("wrong ", i))); !errors.Is(err, ErrWrongPassphrase) {
			t.Fatalf("wrong passphrase %d: got %v, want ErrWrongPassphrase", i, err)
		}
	}
}

// BenchmarkEncryptedPKCS8 opens the openssl keys, whose KDF settings are
// openssl's defaults (2048 PBKDF2 iterations; scrypt N=2^14, r=8, p=1):
// the limits of ParseSecretKey are 8192 times the PBKDF2 time and 128
// times the scrypt time.
func BenchmarkEncryptedPKCS8(b *testing.B) {
	for _, k := range opensslKeys {
		data := readFile(b, filepath.Join(sshKeysDir, k.file))
		b.Run(k.file, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseSecretKey(data, constPass(k.pass)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
