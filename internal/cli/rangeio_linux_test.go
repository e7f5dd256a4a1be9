package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// TestDecryptRangeReadsLittle runs "decrypt --range" of 1 MiB out of a
// 64 MiB file as a process and reads the kernel's count of the bytes it
// read (rchar of /proc/self/io): no more than the header, the touched
// segments, one segment of read-ahead, and the key file.
func TestDecryptRangeReadsLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB file")
	}
	dir := t.TempDir()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	skData, err := keys.MarshalSecretKey(&sk, nil, keys.KDFNone, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	skPath := filepath.Join(dir, "me.sec")
	if err := os.WriteFile(skPath, skData, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	f, err := os.Create(filepath.Join(dir, "big.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := c4gh.Encrypt(w, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	const start, n = 30<<20 + 777, 1 << 20
	report := filepath.Join(dir, "io")
	out := filepath.Join(dir, "part")
	cmd := exec.Command(os.Args[0], "decrypt", "--sk", skPath, "--range", fmt.Sprintf("%d-%d", start, start+n), "-i", f.Name(), "-o", out)
	cmd.Env = append(os.Environ(), childEnv+"="+report, secretKeyEnv+"=", passphraseEnv+"=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("decrypt --range: %v: %s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, plain[start:start+n]) {
		t.Fatalf("decrypt --range wrote %d bytes (%v), not the range", len(got), err)
	}
	io, err := os.ReadFile(report)
	if err != nil {
		clitest.Missing(t, "no /proc/self/io here: %v", err)
	}
	var rchar int64 = -1
	for _, line := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			fmt.Sscan(v, &rchar)
		}
	}
	touched := int64((start+n-1)/body.SegmentSize - start/body.SegmentSize + 1)
	const headerMax = 4096   // one recipient: about 200 bytes
	const startup = 16 << 10 // what the process reads of its own (the runtime, /proc)
	limit := headerMax + (touched+1)*body.EncryptedSegmentSize + int64(len(skData)) + startup
	if rchar < 0 || rchar > limit {
		t.Fatalf("the process read %d bytes for a range touching %d segments; limit %d", rchar, touched, limit)
	}
	t.Logf("read %d bytes for %d touched segments (%d bytes of them)", rchar, touched, touched*body.EncryptedSegmentSize)
}
