package cli

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	theirs "github.com/neicnordic/crypt4gh/streaming"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/keys"
)

// startAgent serves an agent holding sks (named as their files in the
// tests) on a socket of its own, and points CRYPT4GH_AGENT and CRYPT4GH_PK
// of this process, and of the processes it starts, at it.
func startAgent(t *testing.T, sks map[string]*keys.SecretKey) {
	t.Helper()
	a, err := agent.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, sk := range sks {
		if err := a.Add(sk, name, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s, err := agent.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(s.Listener())
	t.Cleanup(func() { a.Close(); s.Remove() })
	t.Setenv(agent.SocketEnv, s.Path)
	t.Setenv(agent.PKEnv, a.PublicKey().String())
}

// hideKey renames NAME.sec in dir, so that no command finds it under
// that name: what reads with it is the agent.
func hideKey(t *testing.T, dir, name string) string {
	t.Helper()
	hidden := "." + name + ".kept"
	if err := os.Rename(filepath.Join(dir, name+".sec"), filepath.Join(dir, hidden)); err != nil {
		t.Fatal(err)
	}
	return hidden
}

// readKey reads NAME.sec of dir, which has no passphrase.
func readKey(t *testing.T, dir, name string) *keys.SecretKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".sec"))
	if err != nil {
		t.Fatal(err)
	}
	sk, err := keys.ParseSecretKey(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}

// theirsDecrypt decrypts file with the other Go implementation.
func theirsDecrypt(t *testing.T, file []byte, sk *keys.SecretKey) []byte {
	t.Helper()
	r, err := theirs.NewCrypt4GHReader(bytes.NewReader(file), *sk, nil)
	if err != nil {
		t.Fatalf("the other implementation: %v", err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("the other implementation: %v", err)
	}
	return got
}

// agentBAM makes smallBAM's files and them.sec in a folder, and an agent
// that holds me.sec, whose file is hidden (named kept). It returns the
// folder, them's key and the header value of its public key.
func agentBAM(t *testing.T) (dir string, them *keys.SecretKey, pub []byte, kept string) {
	t.Helper()
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	dir = t.TempDir()
	smallBAM(t, dir)
	them, pub = themKey(t, dir)
	me := readKey(t, dir, "me")
	kept = hideKey(t, dir, "me")
	startAgent(t, map[string]*keys.SecretKey{"me.sec": me})
	return dir, them, pub, kept
}

// TestAgentRewritesFiles: inside an agent, without --sk, reencrypt,
// rearrange, splice and splice --region write files whose new packets the
// agent sealed with its key as the writer: the recipient opens them (with
// --sender_pk of the agent's key), and so does the other Go
// implementation.
func TestAgentRewritesFiles(t *testing.T) {
	dir, them, _, _ := agentBAM(t)
	plain, err := os.ReadFile(filepath.Join(dir, "reads.bam"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	mustRun(t, dir, "reencrypt", "--recipient_pk", "them.pub", "-i", "reads.bam.c4gh", "-o", "re.c4gh")
	mustRun(t, dir, "decrypt", "--sk", "them.sec", "--sender_pk", "me.pub", "-i", "re.c4gh", "-o", "re.bam")
	sameBytes(t, "reencrypt through the agent", read("re.bam"), plain)
	sameBytes(t, "reencrypt through the agent, the other implementation", theirsDecrypt(t, read("re.c4gh"), them), plain)

	mustRun(t, dir, "rearrange", "--range", "100-70000", "-i", "reads.bam.c4gh", "-o", "r.c4gh")
	mustRun(t, dir, "decrypt", "-i", "r.c4gh", "-o", "r.out")
	sameBytes(t, "rearrange through the agent", read("r.out"), plain[100:70000])

	mustRun(t, dir, "splice", "--recipient_pk", "them.pub", "--range", "0-10", "--range", "70000-80000", "-i", "reads.bam.c4gh", "-o", "s.c4gh")
	want := append(append([]byte(nil), plain[:10]...), plain[70000:80000]...)
	mustRun(t, dir, "decrypt", "--sk", "them.sec", "--sender_pk", "me.pub", "-i", "s.c4gh", "-o", "s.out")
	sameBytes(t, "splice through the agent", read("s.out"), want)
	sameBytes(t, "splice through the agent, the other implementation", theirsDecrypt(t, read("s.c4gh"), them), want)

	const region = "chr1:20000-120000"
	mustRun(t, dir, "splice", "--recipient_pk", "them.pub", "--region", region, "-i", "reads.bam.c4gh", "-o", "reg.bam.c4gh")
	mustRun(t, dir, "decrypt", "--sk", "them.sec", "--sender_pk", "me.pub", "-i", "reg.bam.c4gh", "-o", "reg.bam")
	checkRegionFile(t, dir, regionCase{name: "reads.bam", index: "reads.bam.bai", count: samCount, head: samHeader, index2: samIndex}, "reg.bam", region)
}

// TestAgentRekeyInPlace: the in-place rules of reencrypt and splice hold
// against the agent's key: a result that it would no longer open is
// refused (the object unchanged), --add adds the packets the agent seals
// and finds them again (nothing to do the second time), --drop-self
// lets the key go; a batch over a prefix rekeys every object.
func TestAgentRekeyInPlace(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	e.keygen(t, "carol")
	plain := randomData(70000, 91)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "f.c4gh", enc)
	e.put(t, "b/1.c4gh", encryptBytes(t, plain[:100], e.sk))
	e.put(t, "b/2.c4gh", encryptBytes(t, plain[100:], e.sk))
	kept := hideKey(t, e.dir, "me")
	startAgent(t, map[string]*keys.SecretKey{"me.sec": e.sk})
	decrypts := func(key, obj string, want []byte) bool {
		code, _, _ := e.run(t, "decrypt", "--sk", key, "--sender_pk", "me.pub", "-i", url(obj), "-o", "out", "--force")
		if key == kept { // packets the file was made with
			code, _, _ = e.run(t, "decrypt", "--sk", key, "-i", url(obj), "-o", "out", "--force")
		}
		return code == 0 && bytes.Equal(e.read(t, "out"), want)
	}

	inPlace := []string{"-i", url("f.c4gh"), "-o", url("f.c4gh"), "--force"}
	code, _, stderr := e.run(t, append([]string{"reencrypt", "--recipient_pk", "bob.pub"}, inPlace...)...)
	if code != exitUsage || !strings.Contains(stderr, "would no longer open with the agent's key") {
		t.Errorf("in place for bob alone: exit %d\n%s", code, stderr)
	}
	code, _, stderr = e.run(t, append([]string{"splice", "--recipient_pk", "bob.pub", "--range", "0-100"}, inPlace...)...)
	if code != exitUsage || !strings.Contains(stderr, "would no longer open with the agent's key") {
		t.Errorf("splice in place for bob alone: exit %d\n%s", code, stderr)
	}
	if !bytes.Equal(e.get(t, "f.c4gh"), enc) {
		t.Fatal("the object was changed")
	}

	e.must(t, append([]string{"reencrypt", "--recipient_pk", "bob.pub", "--add"}, inPlace...)...)
	if !decrypts(kept, "f.c4gh", plain) || !decrypts("bob.sec", "f.c4gh", plain) {
		t.Error("after --add bob: not both of me and bob read the object")
	}
	_, _, stderr = e.run(t, append([]string{"reencrypt", "--recipient_pk", "bob.pub", "--add"}, inPlace...)...)
	if !strings.Contains(stderr, "every recipient can read it already: nothing to do") {
		t.Errorf("--add bob again through the agent:\n%s", stderr)
	}
	e.must(t, append([]string{"reencrypt", "--recipient_pk", "carol.pub", "--trim", "--drop-self"}, inPlace...)...)
	if decrypts(kept, "f.c4gh", plain) || decrypts("bob.sec", "f.c4gh", plain) || !decrypts("carol.sec", "f.c4gh", plain) {
		t.Error("after --trim --drop-self for carol: only carol should read the object")
	}

	e.must(t, "reencrypt", "--recipient_pk", "bob.pub", "--add", "--force", url("b/"))
	if !decrypts("bob.sec", "b/1.c4gh", plain[:100]) || !decrypts("bob.sec", "b/2.c4gh", plain[100:]) || !decrypts(kept, "b/2.c4gh", plain[100:]) {
		t.Error("a batch through the agent: not every object of b/ for me and bob")
	}
}

// TestServeAgent: serve without --sk, inside an agent: two instances with
// the agent's key, and one with the same key from its file, serve each
// other's tickets (the key of the data URLs is derived alike by the agent
// and from the file), and the Crypt4GH tickets decrypt for the requester.
func TestServeAgent(t *testing.T) {
	dir, sk, pub, kept := agentBAM(t)
	a := startServe(t, dir, "--plaintext", ".")
	b := startServe(t, dir, "--plaintext", ".")
	f := startServe(t, dir, "--sk", kept, "--plaintext", ".")
	const region = "chr1:20000-120000"
	c := regionCase{name: "reads.bam", index: "reads.bam.bai", count: samCount, head: samHeader, index2: samIndex}
	q := htsgetQuery(region, "encryptionScheme", "C4GH")
	tk := c4ghTicket(t, dir, http.MethodGet, a.base+"/reads/reads?"+q, nil, pub, sk, "agent.bam")
	checkRegionFile(t, dir, c, "agent.bam", region)
	moved := func(tk *htsget.Ticket, from, to *served) *htsget.Ticket {
		m := &htsget.Ticket{Format: tk.Format}
		for _, u := range tk.URLs {
			u.URL = strings.Replace(u.URL, from.base, to.base, 1)
			m.URLs = append(m.URLs, u)
		}
		return m
	}
	for _, other := range []*served{b, f} {
		os.WriteFile(filepath.Join(dir, "moved.bam.c4gh"), fetchTicket(t, moved(tk, a, other)), 0o600)
		mustRun(t, dir, "decrypt", "--sk", "them.sec", "-i", "moved.bam.c4gh", "-o", "moved.bam", "-f")
		checkRegionFile(t, dir, c, "moved.bam", region)
	}
	// A plaintext ticket of the instance with the key file, from the
	// agent's.
	tk, he := getTicket(t, http.MethodGet, f.base+"/reads/reads?"+htsgetQuery(region), nil, nil)
	if he != nil {
		t.Fatal(he)
	}
	os.WriteFile(filepath.Join(dir, "plain.bam"), fetchTicket(t, moved(tk, f, a)), 0o600)
	checkRegionFile(t, dir, c, "plain.bam", region)
}
