package reencrypt_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// rekeyFile reads file and rekeys it with reader and opts; on success it
// returns the new file: the new header, then the body copied by CopyBody.
func rekeyFile(t *testing.T, file []byte, reader *keys.SecretKey, opts reencrypt.FileOptions) (*reencrypt.File, []byte, error) {
	t.Helper()
	src := bytes.NewReader(file)
	f, err := reencrypt.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if f.HeaderSize() != int64(len(file))-int64(src.Len()) {
		t.Fatalf("HeaderSize %d, but the body starts at %d", f.HeaderSize(), len(file)-src.Len())
	}
	if err := f.Rekey(reader, opts); err != nil {
		return f, nil, err
	}
	var out bytes.Buffer
	if _, err := f.WriteHeader(&out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), f.Header()) {
		t.Fatal("WriteHeader and Header differ")
	}
	if _, err := f.CopyBody(&out, src); err != nil {
		t.Fatal(err)
	}
	return f, out.Bytes(), nil
}

func recipients(ks ...*keys.SecretKey) reencrypt.RekeyOptions {
	var o reencrypt.RekeyOptions
	for _, k := range ks {
		o.Recipients = append(o.Recipients, k.Public())
	}
	return o
}

// TestFileRekeyRules: the rules of File.Rekey around Rekey, in place and
// for a new output.
func TestFileRekeyRules(t *testing.T) {
	writer, alice, bob := newKey(t), newKey(t), newKey(t)
	plain := plaintext(2*seg+300, 20)
	file := encrypt(t, plain, nil, writer, alice.Public())

	// In place, a result that alice no longer opens is refused, unless
	// DropSelf; with her own key among the recipients it is made.
	if _, _, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: recipients(bob), InPlace: true}); !errors.Is(err, reencrypt.ErrLocksOut) {
		t.Errorf("in place for bob only: %v, want ErrLocksOut", err)
	}
	_, out, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: recipients(bob), InPlace: true, DropSelf: true})
	if err != nil || !bytes.Equal(decrypt(t, out, bob), plain) {
		t.Fatalf("in place with DropSelf: %v", err)
	}
	if _, err := tryDecrypt(out, alice); err == nil {
		t.Error("alice still opens the result that dropped her")
	}
	// For a new output the reference semantics hold: alice's packets are
	// replaced, and nothing is refused.
	f, out, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: recipients(bob)})
	if err != nil || f.Warning() != nil || !bytes.Equal(decrypt(t, out, bob), plain) {
		t.Fatalf("new output for bob: %v (warning %v)", err, f.Warning())
	}
	if !f.Opens(bob) || f.Opens(alice) {
		t.Error("Opens is wrong about the new header")
	}
	// Nothing to add: in place that is said, for a new output the
	// header is kept as it is.
	add := reencrypt.FileOptions{RekeyOptions: recipients(alice)}
	add.Add = true
	if _, _, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: add.RekeyOptions, InPlace: true}); !errors.Is(err, reencrypt.ErrNothingToAdd) {
		t.Errorf("in place, nothing to add: %v, want ErrNothingToAdd", err)
	}
	if _, out, err := rekeyFile(t, file, alice, add); err != nil || !bytes.Equal(out, file) {
		t.Errorf("new output, nothing to add: %v; the file should be copied as it is", err)
	}
}

// TestFileRekeyTwoEditLists: a file whose edit list alice opens, with
// packets of another reader kept, may leave a recipient two edit lists:
// refused in place and with Add, a warning for a new output, and nothing
// to say with Trim.
func TestFileRekeyTwoEditLists(t *testing.T) {
	writer, alice, bob, carol := newKey(t), newKey(t), newKey(t), newKey(t)
	plain := plaintext(seg+10, 21)
	file := encrypt(t, plain, []uint64{5, 1000}, writer, alice.Public(), carol.Public())
	self := recipients(bob, alice)
	for name, opts := range map[string]reencrypt.FileOptions{
		"in place": {RekeyOptions: self, InPlace: true},
		"add":      {RekeyOptions: reencrypt.RekeyOptions{Recipients: self.Recipients, Add: true}},
	} {
		if _, _, err := rekeyFile(t, file, alice, opts); !errors.Is(err, reencrypt.ErrTwoEditLists) {
			t.Errorf("%s: %v, want ErrTwoEditLists", name, err)
		}
	}
	f, out, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: self})
	if err != nil || !errors.Is(f.Warning(), reencrypt.ErrTwoEditLists) {
		t.Fatalf("new output: %v, warning %v; want the warning", err, f.Warning())
	}
	if !bytes.Equal(decrypt(t, out, bob), plain[5:1005]) {
		t.Error("bob does not read the edit list's bytes")
	}
	trim := reencrypt.FileOptions{RekeyOptions: reencrypt.RekeyOptions{Recipients: self.Recipients, Trim: true}, InPlace: true}
	if f, _, err := rekeyFile(t, file, alice, trim); err != nil || f.Warning() != nil {
		t.Errorf("in place with Trim: %v, warning %v", err, f.Warning())
	}
}

// TestFileCheckLastSegment: a body cut inside its last segment at a
// plausible length is found by CheckLastSegment and by CopyBody.
func TestFileCheckLastSegment(t *testing.T) {
	writer, alice, bob := newKey(t), newKey(t), newKey(t)
	file := encrypt(t, plaintext(seg+500, 22), nil, writer, alice.Public())
	cut := file[:len(file)-100]
	f, err := reencrypt.ReadFile(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Rekey(alice, reencrypt.FileOptions{RekeyOptions: recipients(bob)}); err != nil {
		t.Fatal(err)
	}
	hs := f.HeaderSize()
	if err := f.CheckLastSegment(bytes.NewReader(cut), hs, int64(len(cut))-hs); !errors.Is(err, body.ErrAuth) {
		t.Errorf("CheckLastSegment: %v, want ErrAuth", err)
	}
	var out bytes.Buffer
	if _, err := f.CopyBody(&out, bytes.NewReader(cut[hs:])); !errors.Is(err, body.ErrAuth) {
		t.Errorf("CopyBody: %v, want ErrAuth", err)
	}
	if err := f.CheckLastSegment(bytes.NewReader(file), hs, int64(len(file))-hs); err != nil {
		t.Errorf("whole file: %v", err)
	}
}

// TestFileRekeyAddNothingWithEditList: Add that finds nothing to add
// writes no packet, so it leaves nobody a second edit list: in place it
// is ErrNothingToAdd (the command's "nothing to do", exit 0), for a new
// output the file is copied as it is, not refused as ErrTwoEditLists.
func TestFileRekeyAddNothingWithEditList(t *testing.T) {
	writer, alice, carol := newKey(t), newKey(t), newKey(t)
	file := encrypt(t, plaintext(seg+10, 23), []uint64{5, 1000}, writer, alice.Public(), carol.Public())
	add := reencrypt.RekeyOptions{Recipients: []keys.PublicKey{alice.Public()}, Add: true}
	if _, _, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: add, InPlace: true}); !errors.Is(err, reencrypt.ErrNothingToAdd) {
		t.Errorf("in place, nothing to add: %v, want ErrNothingToAdd", err)
	}
	if f, out, err := rekeyFile(t, file, alice, reencrypt.FileOptions{RekeyOptions: add}); err != nil || f.Warning() != nil || !bytes.Equal(out, file) {
		t.Errorf("new output, nothing to add: %v (warning %v); the file should be copied as it is", err, f.Warning())
	}
}
