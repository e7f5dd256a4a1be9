package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs the command in-process with dir as the folder of relative
// paths given in args, and returns the exit code and the output.
func runArgs(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(append([]string{"crypt4gh"}, args...), bytes.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestRunsShareNoState runs encrypt twice in one process: the first run
// takes its writer key from C4GH_SECRET_KEY, the second, with the
// variable unset, must make a key of its own, as the first run never
// happened.
func TestRunsShareNoState(t *testing.T) {
	dir := t.TempDir()
	writer, me := filepath.Join(dir, "writer"), filepath.Join(dir, "me")
	t.Setenv(passphraseEnv, "")
	t.Setenv(publicKeyEnv, "")
	t.Setenv(secretKeyEnv, "")
	for _, k := range []string{writer, me} {
		if code, _, stderr := runArgs(t, nil, "keygen", "--sk", k+".sec", "--pk", k+".pub", "--nocrypt"); code != 0 {
			t.Fatal(stderr)
		}
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("no state shared between runs\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Setenv(secretKeyEnv, writer+".sec")
	if code, _, stderr := runArgs(t, nil, "encrypt", "--recipient_pk", me+".pub", "-i", plain, "-o", filepath.Join(dir, "1.c4gh")); code != 0 {
		t.Fatal(stderr)
	}
	os.Unsetenv(secretKeyEnv)
	if code, _, stderr := runArgs(t, nil, "encrypt", "--recipient_pk", me+".pub", "-i", plain, "-o", filepath.Join(dir, "2.c4gh")); code != 0 {
		t.Fatal(stderr)
	}

	// The first file was written by the writer key, the second was not.
	code, out, stderr := runArgs(t, nil, "decrypt", "--sk", me+".sec", "--sender_pk", writer+".pub", "-i", filepath.Join(dir, "1.c4gh"))
	if code != 0 || !strings.Contains(out, "no state shared") {
		t.Fatalf("first file, --sender_pk writer: exit %d: %s", code, stderr)
	}
	if code, _, _ := runArgs(t, nil, "decrypt", "--sk", me+".sec", "--sender_pk", writer+".pub", "-i", filepath.Join(dir, "2.c4gh")); code != exitKey {
		t.Fatalf("second file, --sender_pk writer: exit %d, want %d: the unset C4GH_SECRET_KEY was still used", code, exitKey)
	}
}
