package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReencryptCommandErrors runs reencrypt, rearrange and splice into
// failures and checks the exit code (errors.go), that the message is one
// "crypt4gh: error:" line, and that neither the output file nor a
// temporary file is left in the output folder.
func TestReencryptCommandErrors(t *testing.T) {
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range []string{"me", "stranger"} {
		var stderr bytes.Buffer
		args := []string{"crypt4gh", "keygen", "--sk", in(name + ".sec"), "--pk", in(name + ".pub"), "--nocrypt"}
		if code := Run(args, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != exitOK {
			t.Fatalf("keygen: exit %d: %s", code, stderr.String())
		}
	}
	plain := bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160000 bytes, 3 segments
	if err := os.WriteFile(in("plain"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := Run([]string{"crypt4gh", "encrypt", "--recipient_pk", in("me.pub"), "-i", in("plain"), "-o", in("plain.c4gh")},
		strings.NewReader(""), &bytes.Buffer{}, &stderr); code != exitOK {
		t.Fatalf("encrypt: exit %d: %s", code, stderr.String())
	}
	file, err := os.ReadFile(in("plain.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	// cut inside the nonce of the last segment: the body length is impossible
	if err := os.WriteFile(in("truncated.c4gh"), file[:len(file)-(160000-2*65536+28)+5], 0o644); err != nil {
		t.Fatal(err)
	}

	me, stranger, c4 := in("me.sec"), in("stranger.sec"), in("plain.c4gh")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin []byte
		code  int
		msg   string
	}{
		{"rearrange beyond the end", []string{"rearrange", "--sk", me, "--range", "160000-160010", "-i", c4}, nil, exitUsage, "range starts beyond the end of the data"},
		{"rearrange empty range", []string{"rearrange", "--sk", me, "--range", "5-5", "-i", c4}, nil, exitUsage, `invalid range "5-5"`},
		{"rearrange malformed range", []string{"rearrange", "--sk", me, "--range", "1e3-2e3", "-i", c4}, nil, exitUsage, "invalid range"},
		{"rearrange no range", []string{"rearrange", "--sk", me, "-i", c4}, nil, exitUsage, "no range"},
		{"rearrange stranger key", []string{"rearrange", "--sk", stranger, "--range", "0-10", "-i", c4}, nil, exitKey, "no header packet can be decrypted"},
		{"rearrange not crypt4gh", []string{"rearrange", "--sk", me, "--range", "0-10", "-i", in("plain")}, nil, exitData, "not a crypt4gh file"},
		{"rearrange truncated body", []string{"rearrange", "--sk", me, "--range", "0-10", "-i", in("truncated.c4gh")}, nil, exitData, "truncated"},
		// rearrange from a pipe works since issue 11 (testdata/script/rearrange.txtar); a range past the data on a pipe fails as on a file:
		{"rearrange from a pipe, range past the data", []string{"rearrange", "--sk", me, "--range", "99999999-100000000"}, file, exitUsage, "beyond the end"},
		{"splice one range beyond the end", []string{"splice", "--sk", me, "--range", "0-10", "--range", "170000", "-i", c4}, nil, exitUsage, "range starts beyond the end of the data"},
		{"splice end before start", []string{"splice", "--sk", me, "--range", "10-5", "-i", c4}, nil, exitUsage, `invalid range "10-5"`},
		{"splice no range", []string{"splice", "--sk", me, "-i", c4}, nil, exitUsage, "no range"},
		{"splice stranger key", []string{"splice", "--sk", stranger, "--recipient_pk", in("me.pub"), "--range", "0-10", "-i", c4}, nil, exitKey, "no header packet can be decrypted"},
		{"splice missing recipient key", []string{"splice", "--sk", me, "--recipient_pk", in("nobody.pub"), "--range", "0-10", "-i", c4}, nil, exitKey, "does not exist"}, // a missing key file is a key error, as docs/exit-codes.md says
		{"reencrypt no recipient", []string{"reencrypt", "--sk", me, "-i", c4}, nil, exitUsage, "no recipient"},
		{"reencrypt stranger key", []string{"reencrypt", "--sk", stranger, "--recipient_pk", in("me.pub"), "-i", c4}, nil, exitKey, "no header packet can be decrypted"},
		{"reencrypt not crypt4gh", []string{"reencrypt", "--sk", me, "--recipient_pk", in("me.pub"), "-i", in("plain")}, nil, exitData, "not a crypt4gh file"},
		{"reencrypt header-only of nothing", []string{"reencrypt", "--header-only", "--sk", me, "--recipient_pk", in("me.pub")}, []byte{}, exitData, "empty input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "out.c4gh")
			var stdout, stderr bytes.Buffer
			args := append([]string{"crypt4gh"}, tc.args...)
			args = append(args, "-o", out)
			code := Run(args, bytes.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			msg := stderr.String()
			if !strings.HasPrefix(msg, "crypt4gh: error: ") || !strings.Contains(msg, tc.msg) {
				t.Errorf("stderr %q, want a crypt4gh: error: line with %q", msg, tc.msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("%d bytes on stdout", stdout.Len())
			}
			entries, err := os.ReadDir(outDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("left behind in the output folder: %s", e.Name())
			}
		})
	}
}
