package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCodeTable runs one case of every row of the table of exit codes
// (docs/exit-codes.md) through the command line.
func TestExitCodeTable(t *testing.T) {
	dir := t.TempDir()
	in := func(n string) string { return filepath.Join(dir, n) }
	t.Setenv(secretKeyEnv, "")
	t.Setenv(publicKeyEnv, "")
	t.Setenv(passphraseEnv, "secret")
	for _, args := range [][]string{
		{"keygen", "--sk", in("me.sec"), "--pk", in("me.pub")},
		{"keygen", "--sk", in("other.sec"), "--pk", in("other.pub"), "--nocrypt"},
	} {
		if code, _, stderr := runArgs(t, nil, args...); code != 0 {
			t.Fatal(stderr)
		}
	}
	plain := strings.Repeat("exit codes\n", 10000)
	os.WriteFile(in("plain"), []byte(plain), 0o600)
	if code, _, stderr := runArgs(t, nil, "encrypt", "--recipient_pk", in("me.pub"), "-i", in("plain"), "-o", in("f.c4gh")); code != 0 {
		t.Fatal(stderr)
	}
	enc, _ := os.ReadFile(in("f.c4gh"))
	if code, _, stderr := runArgs(t, nil, "rearrange", "--sk", in("me.sec"), "--range", "0-100000", "-i", in("f.c4gh"), "-o", in("r.c4gh")); code != 0 {
		t.Fatal(stderr)
	}
	edited, _ := os.ReadFile(in("r.c4gh"))
	// Its last segment cut off: the edit list reaches past the body.
	edited = edited[:len(edited)-(len(plain)-65536+28)]
	write := func(name string, b []byte) string {
		os.WriteFile(in(name), b, 0o600)
		return in(name)
	}
	tampered := append([]byte{}, enc...)
	tampered[len(tampered)-5] ^= 1
	v2 := append([]byte{}, enc...)
	v2[8] = 2
	interop := filepath.Join(interopDir, "..", "keys")
	os.Mkdir(in("adir"), 0o700)

	for _, tc := range []struct {
		name string
		code int
		pass string
		args []string
		want string
	}{
		{"bad flag", exitUsage, "", []string{"decrypt", "--nosuchflag"}, "unknown flag --nosuchflag"},
		{"bad short flags", exitUsage, "", []string{"decrypt", "-qf"}, "unknown flag -qf"},
		{"bad flag value", exitUsage, "", []string{"decrypt", "--jobs", "a: -x"}, `invalid value "a: -x" for flag --jobs`},
		{"flag without its value", exitUsage, "", []string{"decrypt", "--sk"}, "flag --sk needs a value"},
		{"malformed range", exitUsage, "", []string{"decrypt", "--sk", in("me.sec"), "--range", "10-5", "-i", in("f.c4gh")}, "invalid range"},
		{"empty range", exitUsage, "", []string{"decrypt", "--sk", in("me.sec"), "--range", "5-5", "-i", in("f.c4gh")}, "invalid range"},
		{"range beyond the data", exitUsage, "secret", []string{"decrypt", "--sk", in("me.sec"), "--range", "9999999", "-i", in("f.c4gh"), "-o", in("x")}, "beyond the end"},
		{"existing output", exitUsage, "", []string{"decrypt", "--sk", in("me.sec"), "-i", in("f.c4gh"), "-o", in("plain")}, "already exists"},
		{"wrong passphrase", exitKey, "wrong", []string{"decrypt", "--sk", in("me.sec"), "-i", in("f.c4gh"), "-o", in("x")}, "wrong passphrase"},
		{"malformed key file", exitKey, "", []string{"decrypt", "--sk", in("plain"), "-i", in("f.c4gh"), "-o", in("x")}, "malformed key"},
		{"unsupported key file", exitKey, "", []string{"decrypt", "--sk", filepath.Join(interop, "ssh_rsa_plain"), "-i", in("f.c4gh"), "-o", in("x")}, "unsupported key"},
		{"missing key file", exitKey, "", []string{"decrypt", "--sk", in("nosuch"), "-i", in("f.c4gh"), "-o", in("x")}, "does not exist"},
		{"key file is a folder", exitKey, "", []string{"decrypt", "--sk", in("adir"), "-i", in("f.c4gh"), "-o", in("x")}, "is a directory"},
		{"input is a folder, batch decrypt", exitUsage, "secret", []string{"decrypt", "--sk", in("me.sec"), "-o", in("outdir") + "/", in("adir") + "/"}, "hint: give the files in it as FILE arguments (" + filepath.Join(in("adir"), "*") + ")"},
		{"input is a folder, verify", exitUsage, "secret", []string{"verify", "--sk", in("me.sec"), in("adir")}, "hint: give the files in it as FILE arguments"},
		{"no packet for this key", exitKey, "", []string{"decrypt", "--sk", in("other.sec"), "-i", in("f.c4gh"), "-o", in("x")}, "no header packet can be decrypted"},
		{"not a crypt4gh file", exitData, "", []string{"decrypt", "--sk", in("me.sec"), "-i", in("plain"), "-o", in("x")}, "not a crypt4gh file"},
		{"unsupported version", exitData, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", write("v2", v2), "-o", in("x")}, "unsupported crypt4gh version"},
		{"header without packets", exitData, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", write("nopackets", []byte("crypt4gh\x01\x00\x00\x00\x00\x00\x00\x00")), "-o", in("x")}, "the header has no packets"},
		{"truncated header", exitData, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", write("cuth", enc[:50]), "-o", in("x")}, "header truncated"},
		{"truncated body", exitData, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", write("cutb", enc[:len(enc)-len(plain)%65536-20]), "-o", in("x")}, "is truncated"},
		{"header without packets, inspect", exitData, "", []string{"inspect", write("nopackets", []byte("crypt4gh\x01\x00\x00\x00\x00\x00\x00\x00"))}, "the header has no packets"},
		{"header without packets, ls", exitData, "", []string{"ls", in("nopackets")}, "the header has no packets"},
		{"truncated body, ls", exitData, "", []string{"ls", in("f.c4gh"), in("cutb")}, "is truncated"},
		{"truncated body, inspect --json", exitData, "", []string{"inspect", "--json", in("f.c4gh"), in("cutb")}, "is truncated"},
		{"edit list past the body, --strict", exitData, "secret", []string{"decrypt", "--strict", "--sk", in("me.sec"), "-i", write("short", edited), "-o", in("x")}, "the edit list reaches past"},
		{"edit list past the body, verify --strict", exitData, "secret", []string{"verify", "--strict", "--sk", in("me.sec"), in("short")}, "the edit list reaches past"},
		{"tampered", exitData, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", write("t", tampered), "-o", in("x")}, "failed authentication"},
		{"I/O error", exitError, "secret", []string{"decrypt", "--sk", in("me.sec"), "-i", in("f.c4gh"), "-o", in("nodir/x")}, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(passphraseEnv, tc.pass)
			code, _, stderr := runArgs(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, tc.code, tc.want, stderr)
			}
			if _, err := os.Stat(in("x")); err == nil {
				t.Error("an output was left")
				os.Remove(in("x"))
			}
		})
	}
}
