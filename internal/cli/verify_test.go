package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyInterop verifies every file of the interop manifest with the
// reader's key: files that decrypt must pass, files that must be rejected
// must fail with the exit code of their error class.
func TestVerifyInterop(t *testing.T) {
	m := loadManifest(t)
	seen := map[string]bool{}
	plainKeys := newPlainKeys(t)
	for _, tc := range m.Cases {
		pass := "<none>"
		if tc.Passphrase != nil {
			pass = *tc.Passphrase
		}
		id := strings.Join([]string{tc.File, tc.BodyFile, tc.SecretKey, pass, tc.SenderPK}, "|")
		if seen[id] {
			continue
		}
		seen[id] = true
		t.Run(tc.Name, func(t *testing.T) {
			file := filepath.Join(interopDir, tc.File)
			if tc.BodyFile != "" {
				file = concat(t, file, filepath.Join(interopDir, tc.BodyFile))
			}
			sk := filepath.Join(interopDir, tc.SecretKey)
			if tc.ErrorClass == "wrong-passphrase" {
				setPassphrase(t, tc.Passphrase)
			} else {
				sk = plainKeys.get(t, sk, tc.Passphrase)
			}
			args := []string{"crypt4gh", "verify", "--sk", sk}
			if tc.SenderPK != "" {
				args = append(args, "--sender_pk", filepath.Join(interopDir, tc.SenderPK))
			}
			args = append(args, file)
			var stdout, stderr bytes.Buffer
			code := Run(args, bytes.NewReader(nil), &stdout, &stderr)
			switch tc.Kind {
			case "decrypt":
				if code != exitOK || stdout.String() != file+": OK\n" {
					t.Errorf("exit %d, stdout %q; stderr:\n%s", code, stdout.String(), stderr.String())
				}
			case "reject":
				want, ok := exitCodeFor[tc.ErrorClass]
				if !ok {
					t.Fatalf("unknown error class %q", tc.ErrorClass)
				}
				if code != want || stdout.Len() != 0 {
					t.Errorf("exit %d, want %d for %s; stdout %q", code, want, tc.ErrorClass, stdout.String())
				}
				prefix := "crypt4gh: error: " + file + ": "
				if tc.ErrorClass == "wrong-passphrase" {
					prefix = "crypt4gh: error: " // the key fails before any file is read
				}
				if n := strings.Count(stderr.String(), prefix); n != 1 {
					t.Errorf("want one error line naming the file, got:\n%s", stderr.String())
				}
			}
		})
	}
}

// TestVerifyExitCodes checks the exit code of verify on several files: the
// highest code among the failures, whatever their order.
func TestVerifyExitCodes(t *testing.T) {
	t.Setenv("C4GH_PASSPHRASE", "")
	os.Unsetenv("C4GH_PASSPHRASE")
	enc := func(name string) string { return filepath.Join(interopDir, "enc", name) }
	good, flipped, other := enc("reject_base.c4gh"), enc("reject_body_flip.c4gh"), enc("ssh_reader_plainkey.c4gh")
	for _, tc := range []struct {
		files []string
		code  int
		lines int // error lines on stderr
	}{
		{[]string{good}, exitOK, 0},
		{[]string{good, good}, exitOK, 0},
		{[]string{flipped}, exitData, 1},
		{[]string{other}, exitKey, 1},
		{[]string{good, other}, exitKey, 2},
		{[]string{other, flipped, good}, exitData, 3},
		{[]string{flipped, other}, exitData, 3},
		{[]string{good, "missing.c4gh"}, exitUsage, 2},
		{[]string{"missing.c4gh", other}, exitKey, 3},
	} {
		args := append([]string{"crypt4gh", "verify", "-q", "--jobs", "2", "--sk", filepath.Join(interopDir, "keys/dave.sec.pem")}, tc.files...)
		var stdout, stderr bytes.Buffer
		code := Run(args, bytes.NewReader(nil), &stdout, &stderr)
		lines := strings.Count(stderr.String(), "crypt4gh: error: ")
		if code != tc.code || lines != tc.lines || stdout.Len() != 0 {
			t.Errorf("verify %v: exit %d with %d error lines, want %d with %d; stdout %q, stderr:\n%s",
				tc.files, code, lines, tc.code, tc.lines, stdout.String(), stderr.String())
		}
	}
}

// TestInspectExitCodes checks that inspect describes what it can and then
// fails with the right code.
func TestInspectExitCodes(t *testing.T) {
	t.Setenv("C4GH_PASSPHRASE", "")
	os.Unsetenv("C4GH_PASSPHRASE")
	base, err := os.ReadFile(filepath.Join(interopDir, "enc/reject_base.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.c4gh")
	if err := os.WriteFile(short, base[:124+20], 0o644); err != nil {
		t.Fatal(err)
	}
	dave := filepath.Join(interopDir, "keys/dave.sec.pem")
	erin := filepath.Join(interopDir, "keys/erin")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout bool
	}{
		{[]string{filepath.Join(interopDir, "enc/reject_base.c4gh")}, exitOK, true},
		{[]string{"--sk", dave, filepath.Join(interopDir, "enc/reject_base.c4gh")}, exitOK, true},
		{[]string{"--sk", erin, filepath.Join(interopDir, "enc/reject_base.c4gh")}, exitKey, true},
		{[]string{short}, exitData, true},
		{[]string{"--json", "--sk", dave, short}, exitData, true},
		{[]string{filepath.Join(interopDir, "enc/reject_bad_magic.c4gh")}, exitData, false},
		{[]string{filepath.Join(interopDir, "enc/reject_empty_file.c4gh")}, exitData, false},
		{[]string{filepath.Join(interopDir, "enc/reject_truncated_mid_header.c4gh")}, exitData, false},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(append([]string{"crypt4gh", "inspect"}, tc.args...), bytes.NewReader(nil), &stdout, &stderr)
		lines := strings.Count(stderr.String(), "crypt4gh: error: ")
		if code != tc.code || (stdout.Len() > 0) != tc.stdout || lines != min(code, 1) {
			t.Errorf("inspect %v: exit %d, %d bytes out, stderr:\n%s", tc.args, code, stdout.Len(), stderr.String())
		}
	}
}

// TestVerifyPastEditList: segments after what an edit list keeps are part
// of the file. verify authenticates them: 70 KB of noise appended to a
// file whose edit list keeps its first 1,000 bytes fails (exit 4), though
// decrypt, which reads only what the list keeps, still gives those bytes.
func TestVerifyPastEditList(t *testing.T) {
	dir, _ := batchSetup(t)
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "one", "-o", "one.c4gh")
	mustRun(t, dir, "rearrange", "--sk", "me.sec", "--range", "0-1000", "-i", "one.c4gh", "-o", "cut.c4gh")
	mustRun(t, dir, "verify", "--sk", "me.sec", "cut.c4gh")
	b, err := os.ReadFile(filepath.Join(dir, "cut.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 70000)
	for i := range noise {
		noise[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "noisy.c4gh"), append(b, noise...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runIn(t, dir, "verify", "--sk", "me.sec", "noisy.c4gh")
	if code != exitData || !strings.Contains(stderr, "failed authentication") {
		t.Errorf("verify of a file with noise past its edit list: exit %d\n%s", code, stderr)
	}
	if out := mustRun(t, dir, "decrypt", "--sk", "me.sec", "-i", "noisy.c4gh"); len(out) != 1000 {
		t.Errorf("decrypt gave %d bytes, want the 1000 the edit list keeps", len(out))
	}
}
