package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/keys"
)

// inspectJSON mirrors the --json output of inspect as a script would read
// it: with its own field tags, so that a renamed field breaks this test.
type inspectJSON struct {
	File        string `json:"file"`
	Version     int    `json:"version"`
	HeaderSize  int64  `json:"header_size"`
	PacketCount int    `json:"packet_count"`
	Packets     []struct {
		Index           int     `json:"index"`
		Length          int64   `json:"length"`
		Method          int     `json:"method"`
		MethodName      string  `json:"method_name"`
		WriterPublicKey *string `json:"writer_public_key"`
		WriterKeyHex    *string `json:"writer_public_key_hex"`
		Opened          *bool   `json:"opened"`
		Type            *string `json:"type"`
		TypeCode        *int    `json:"type_code"`
	} `json:"packets"`
	BodySize          int64    `json:"body_size"`
	SegmentCount      int64    `json:"segment_count"`
	BodyPlaintextSize *int64   `json:"body_plaintext_size"`
	ReaderPublicKey   *string  `json:"reader_public_key"`
	ReaderKeyHex      *string  `json:"reader_public_key_hex"`
	OpenedPackets     []int    `json:"opened_packets"`
	DataKeyCount      *int     `json:"data_key_count"`
	HasEditList       *bool    `json:"has_edit_list"`
	EditList          []uint64 `json:"edit_list"`
	EditListFits      *bool    `json:"edit_list_fits"`
	PlaintextSize     *int64   `json:"plaintext_size"`
	OpenedBy          *string  `json:"opened_by"`
	Error             *string  `json:"error"`
	Exit              int      `json:"exit"`
	FileBytes         []byte   `json:"file_bytes"`
}

// inspectCase is the part of a manifest case that inspect can check.
type inspectCase struct {
	Name          string   `json:"name"`
	File          string   `json:"file"`
	BodyFile      string   `json:"body_file"`
	Kind          string   `json:"kind"`
	SecretKey     string   `json:"sk"`
	Passphrase    *string  `json:"passphrase"`
	Range         string   `json:"range"`
	ExpectedLen   int64    `json:"expected_len"`
	HeaderLen     int64    `json:"header_len"`
	HeaderPackets int      `json:"header_packets"`
	EditList      []uint64 `json:"edit_list"`
}

func loadInspectCases(t *testing.T) []inspectCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(interopDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Cases []inspectCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cases) == 0 {
		t.Fatal("manifest has no cases")
	}
	return m.Cases
}

// runInspect runs inspect --json on file, with the unprotected secret key
// sk unless it is "", and decodes its output.
func runInspect(t *testing.T, file, sk string) inspectJSON {
	t.Helper()
	setPassphrase(t, nil)
	args := []string{"crypt4gh", "inspect", "--json"}
	if sk != "" {
		args = append(args, "--sk", sk)
	}
	args = append(args, file)
	var stdout, stderr bytes.Buffer
	if code := Run(args, bytes.NewReader(nil), &stdout, &stderr); code != exitOK {
		t.Fatalf("%s: exit %d: %s", strings.Join(args[1:], " "), code, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields() // every field must be documented here too
	var r inspectJSON
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("bad JSON from inspect: %v\n%s", err, stdout.String())
	}
	return r
}

func setPassphrase(t *testing.T, passphrase *string) {
	t.Setenv("C4GH_PASSPHRASE", "")
	if passphrase != nil {
		t.Setenv("C4GH_PASSPHRASE", *passphrase)
	} else {
		os.Unsetenv("C4GH_PASSPHRASE")
	}
}

// TestInspectInterop checks inspect --json, with and without the reader's
// key, against what manifest.json says of every file that decrypts.
func TestInspectInterop(t *testing.T) {
	seen := map[string]bool{}
	plainKeys := newPlainKeys(t)
	for _, tc := range loadInspectCases(t) {
		if tc.Kind != "decrypt" || tc.HeaderLen == 0 {
			continue
		}
		id := tc.File + "|" + tc.BodyFile + "|" + tc.SecretKey
		if seen[id] {
			continue
		}
		seen[id] = true
		t.Run(tc.Name, func(t *testing.T) {
			file := filepath.Join(interopDir, tc.File)
			if tc.BodyFile != "" {
				file = concat(t, file, filepath.Join(interopDir, tc.BodyFile))
			}
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}

			bare := runInspect(t, file, "")
			if bare.Version != 1 || bare.HeaderSize != tc.HeaderLen || bare.PacketCount != tc.HeaderPackets || len(bare.Packets) != tc.HeaderPackets {
				t.Errorf("version %d, header_size %d, packet_count %d, %d packets; want 1, %d, %d",
					bare.Version, bare.HeaderSize, bare.PacketCount, len(bare.Packets), tc.HeaderLen, tc.HeaderPackets)
			}
			sum := int64(16) // magic, version, packet count
			for i, p := range bare.Packets {
				sum += p.Length
				if p.Index != i || p.Method != 0 || p.MethodName != "X25519_chacha20_ietf_poly1305" ||
					p.WriterPublicKey == nil || !sameKey(*p.WriterPublicKey, p.WriterKeyHex) || p.Opened != nil || p.Type != nil {
					t.Errorf("packet %d without a key: %+v", i, p)
				}
			}
			if sum != bare.HeaderSize {
				t.Errorf("packet lengths add up to %d, header_size is %d", sum, bare.HeaderSize)
			}
			if bare.BodySize != fi.Size()-tc.HeaderLen {
				t.Errorf("body_size %d, want %d", bare.BodySize, fi.Size()-tc.HeaderLen)
			}
			if want := (bare.BodySize + body.EncryptedSegmentSize - 1) / body.EncryptedSegmentSize; bare.SegmentCount != want {
				t.Errorf("segment_count %d, want %d", bare.SegmentCount, want)
			}
			if bare.BodyPlaintextSize == nil {
				t.Fatal("body_plaintext_size is null")
			}
			if bare.ReaderPublicKey != nil || bare.ReaderKeyHex != nil || bare.OpenedPackets != nil || bare.DataKeyCount != nil ||
				bare.HasEditList != nil || bare.EditList != nil || bare.EditListFits != nil || bare.PlaintextSize != nil {
				t.Errorf("key fields set without a key: %+v", bare)
			}

			r := runInspect(t, file, plainKeys.get(t, filepath.Join(interopDir, tc.SecretKey), tc.Passphrase))
			if r.PlaintextSize == nil {
				t.Fatal("plaintext_size is null with a key")
			}
			if tc.Range == "" && *r.PlaintextSize != tc.ExpectedLen {
				t.Errorf("plaintext_size %d, want expected_len %d", *r.PlaintextSize, tc.ExpectedLen)
			}
			if *r.HasEditList != (tc.EditList != nil) || !slices.Equal(r.EditList, tc.EditList) {
				t.Errorf("has_edit_list %v, edit_list %v; want %v", *r.HasEditList, r.EditList, tc.EditList)
			}
			if tc.EditList == nil && (*r.PlaintextSize != *r.BodyPlaintextSize || r.EditListFits != nil) {
				t.Errorf("no edit list, but plaintext_size %d, body_plaintext_size %d, edit_list_fits %v",
					*r.PlaintextSize, *r.BodyPlaintextSize, r.EditListFits)
			}
			if tc.EditList != nil && (r.EditListFits == nil || !*r.EditListFits) {
				t.Errorf("edit_list_fits %v, want true", r.EditListFits)
			}
			if len(r.OpenedPackets) == 0 || r.DataKeyCount == nil || *r.DataKeyCount < 1 {
				t.Errorf("opened_packets %v, data_key_count %v", r.OpenedPackets, r.DataKeyCount)
			}
			var opened []int
			editLists := 0
			for i, p := range r.Packets {
				if p.Opened == nil {
					t.Fatalf("packet %d: opened is null with a key", i)
				}
				if *p.Opened {
					opened = append(opened, i)
					if *p.Type == "edit_list" {
						editLists++
					}
				} else if p.Type != nil {
					t.Errorf("packet %d not opened but has type %q", i, *p.Type)
				}
			}
			wantEditLists := 0
			if tc.EditList != nil {
				wantEditLists = 1
			}
			if !slices.Equal(opened, r.OpenedPackets) || editLists != wantEditLists {
				t.Errorf("packets opened %v (edit lists %d), opened_packets %v", opened, editLists, r.OpenedPackets)
			}
		})
	}
	if len(seen) < 10 {
		t.Fatalf("only %d files checked", len(seen))
	}
}

// plainKeys holds unprotected copies of passphrase-protected secret keys,
// so that the inspect and verify tests do not pay for a slow KDF on every
// case; the KDFs are tested in keys and through decrypt in TestInterop.
type plainKeys struct {
	dir   string
	paths map[string]string
}

func newPlainKeys(t *testing.T) *plainKeys {
	return &plainKeys{dir: t.TempDir(), paths: map[string]string{}}
}

// openedKeys caches the keys that plainKeys decrypted, for all tests.
var openedKeys sync.Map // path → keys.SecretKey

// get returns the path of an unprotected copy of the key at path, or path
// itself when the key has no passphrase.
func (p *plainKeys) get(t *testing.T, path string, passphrase *string) string {
	t.Helper()
	if passphrase == nil {
		return path
	}
	if out, ok := p.paths[path]; ok {
		return out
	}
	v, ok := openedKeys.Load(path)
	if !ok {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sk, err := keys.ParseSecretKey(data, func() ([]byte, error) { return []byte(*passphrase), nil })
		if err != nil {
			t.Fatal(err)
		}
		v, _ = openedKeys.LoadOrStore(path, sk)
	}
	sk := v.(keys.SecretKey)
	pem, err := keys.MarshalSecretKey(&sk, nil, keys.KDFNone, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(p.dir, fmt.Sprintf("key%d.sec", len(p.paths)))
	if err := os.WriteFile(out, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	p.paths[path] = out
	return out
}

// sameKey reports whether b64, a key in base64 as key files hold it, and
// hexKey are the same 32-byte key.
func sameKey(b64 string, hexKey *string) bool {
	raw, err := base64.StdEncoding.DecodeString(b64)
	return err == nil && len(raw) == 32 && hexKey != nil && *hexKey == hex.EncodeToString(raw)
}

// TestInspectSeveralKeys: inspect takes --sk more than once and says
// which key opens each file; when none does, exit 3.
func TestInspectSeveralKeys(t *testing.T) {
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	dir := t.TempDir()
	for _, k := range []string{"a", "b", "c"} {
		mustRun(t, dir, "keygen", "--sk", k+".sec", "--pk", k+".pub", "--nocrypt")
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("some data"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "encrypt", "--recipient_pk", "b.pub", "-i", "plain", "-o", "f.c4gh")
	out := mustRun(t, dir, "inspect", "--sk", "a.sec", "--sk", "b.sec", "f.c4gh")
	if !strings.Contains(out, "opened by:       b.sec\n") || !strings.Contains(out, "data keys:       1") {
		t.Errorf("inspect with two keys:\n%s", out)
	}
	js := mustRun(t, dir, "inspect", "--json", "--sk", "a.sec", "--sk", "b.sec", "f.c4gh")
	if !strings.Contains(js, `"opened_by": "b.sec"`) {
		t.Errorf("inspect --json with two keys: %s", js)
	}
	code, _, stderr := runIn(t, dir, "inspect", "--sk", "a.sec", "--sk", "c.sec", "f.c4gh")
	if code != exitKey || !strings.Contains(stderr, "none of the 2 keys") {
		t.Errorf("no key opens it: exit %d, %q", code, stderr)
	}
	// One key: as before, no "opened by".
	if out := mustRun(t, dir, "inspect", "--sk", "b.sec", "f.c4gh"); strings.Contains(out, "opened by") {
		t.Errorf("inspect with one key:\n%s", out)
	}
}

// TestInspectJSONFailures checks that inspect --json gives every file an
// object, also one that fails: a script reading the objects learns which
// failed, why and with what exit code, as stderr says it.
func TestInspectJSONFailures(t *testing.T) {
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "a.sec", "--pk", "a.pub", "--nocrypt")
	mustRun(t, dir, "keygen", "--sk", "b.sec", "--pk", "b.pub", "--nocrypt")
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("some data"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "encrypt", "--recipient_pk", "a.pub", "-i", "plain", "-o", "good.c4gh")
	whole, err := os.ReadFile(filepath.Join(dir, "good.c4gh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"cut.c4gh": whole[:len(whole)-10],
		"bad.c4gh": []byte("not crypt4gh at all\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	decode := func(stdout string) []inspectJSON {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		var all []inspectJSON
		for dec.More() {
			var r inspectJSON
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("bad JSON from inspect: %v\n%s", err, stdout)
			}
			all = append(all, r)
		}
		return all
	}
	code, stdout, stderr := runIn(t, dir, "inspect", "--json", "good.c4gh", "cut.c4gh", "bad.c4gh", "missing.c4gh")
	if code != exitData {
		t.Errorf("exit %d, want %d (the worst): %s", code, exitData, stderr)
	}
	want := []struct {
		file, err string
		exit      int
	}{
		{"good.c4gh", "", exitOK},
		{"cut.c4gh", "truncated", exitData},
		{"bad.c4gh", "not a crypt4gh file", exitData},
		{"missing.c4gh", "does not exist", exitUsage},
	}
	got := decode(stdout)
	if len(got) != len(want) {
		t.Fatalf("%d objects, want %d:\n%s", len(got), len(want), stdout)
	}
	for i, w := range want {
		g := got[i]
		if g.File != w.file || g.Exit != w.exit || (g.Error == nil) != (w.err == "") ||
			(g.Error != nil && !strings.Contains(*g.Error, w.err)) {
			t.Errorf("object %d: file %q, exit %d, error %v; want %q, %d, %q", i, g.File, g.Exit, g.Error, w.file, w.exit, w.err)
		}
		if g.Error != nil && !strings.Contains(stderr, *g.Error) {
			t.Errorf("%s: error %q not on stderr:\n%s", g.File, *g.Error, stderr)
		}
	}
	// One file, and a key that does not open it.
	code, stdout, _ = runIn(t, dir, "inspect", "--json", "--sk", "b.sec", "good.c4gh")
	if got := decode(stdout); code != exitKey || len(got) != 1 || got[0].Exit != exitKey || got[0].Error == nil || got[0].Version != 1 {
		t.Errorf("key that does not open: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = runIn(t, dir, "inspect", "--json", "bad.c4gh")
	if got := decode(stdout); code != exitData || len(got) != 1 || got[0].Exit != exitData || got[0].File != "bad.c4gh" {
		t.Errorf("one file that is not crypt4gh: exit %d:\n%s", code, stdout)
	}
	// A key file that cannot be read stops the command: no object.
	code, stdout, _ = runIn(t, dir, "inspect", "--json", "--sk", "nokey.sec", "good.c4gh", "bad.c4gh")
	if code == exitOK || stdout != "" {
		t.Errorf("missing key file: exit %d, stdout %q", code, stdout)
	}
}

// TestJSONNameBytes: a file name that is not UTF-8, which a JSON string
// cannot hold, comes with its bytes beside it in inspect --json and ls
// --json, as in the batch records.
func TestJSONNameBytes(t *testing.T) {
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "a.sec", "--pk", "a.pub", "--nocrypt")
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("some data"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "bad\xff.c4gh"
	mustRun(t, dir, "encrypt", "--recipient_pk", "a.pub", "-i", "plain", "-o", name)
	if err := os.WriteFile(filepath.Join(dir, "cut\xfe.c4gh"), []byte("crypt4gh"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runIn(t, dir, "inspect", "--json", name, "cut\xfe.c4gh", "good.c4gh")
	if code == exitOK {
		t.Fatalf("inspect of a cut file passed: %s", stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var got []string
	for dec.More() {
		var r inspectJSON
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		got = append(got, string(r.FileBytes))
	}
	if !slices.Equal(got, []string{name, "cut\xfe.c4gh", ""}) {
		t.Errorf("inspect --json file_bytes: %q\n%s", got, stdout)
	}
	_, stdout, _ = runIn(t, dir, "ls", "--json", ".")
	var names []string
	for line := range strings.Lines(stdout) {
		var e struct {
			Name      string `json:"name"`
			NameBytes []byte `json:"name_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.NameBytes != nil {
			names = append(names, string(e.NameBytes))
		} else if !strings.ContainsRune(e.Name, utf8.RuneError) {
			continue
		} else {
			t.Errorf("ls --json: %q without its bytes", e.Name)
		}
	}
	if !slices.Contains(names, name) || !slices.Contains(names, "cut\xfe.c4gh") {
		t.Errorf("ls --json name_bytes: %q\n%s", names, stdout)
	}
}
