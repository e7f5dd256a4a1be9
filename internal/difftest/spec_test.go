package difftest

import (
	"bytes"
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

var update = flag.Bool("update", false, "rewrite the vectors in testdata/difftest")

const vectorDir = "../../testdata/difftest"

// handMade returns a file for sk whose header holds the given payloads
// (for sk only) and whose body is plain under dataKey.
func handMade(t *testing.T, sk *keys.SecretKey, dataKey *[32]byte, plain []byte, payloads ...[]byte) []byte {
	t.Helper()
	h, err := header.Seal(nil, []keys.PublicKey{sk.Public()}, payloads, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.NewBuffer(h.Marshal())
	w, err := body.NewWriter(b, dataKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func editPayload(t *testing.T, el ...uint64) []byte {
	t.Helper()
	p, err := header.EditListPayload(el)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newKeys(t *testing.T) (*keys.SecretKey, *[32]byte) {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	dk := new([32]byte)
	if _, err := cryptorand.Read(dk[:]); err != nil {
		t.Fatal(err)
	}
	return &sk, dk
}

// ourBoth reads file with c4gh.NewReader and c4gh.NewReaderAt and returns
// the error of each (nil when both read want).
func ourBoth(t *testing.T, file []byte, sk *keys.SecretKey) (streamErr, atErr error, stream, at []byte) {
	t.Helper()
	stream, streamErr = ourDecrypt(file, sk, nil, modeWriteTo, 0)
	at, atErr = ourDecrypt(file, sk, nil, modeReaderAt, 0)
	return streamErr, atErr, stream, at
}

// TestDeliberateDifferences names the cases where the two sides disagree
// on purpose (testdata/difftest/README.md): for each, we must do what the
// specification says, and the oracle is checked to still do what the
// README says it does.
func TestDeliberateDifferences(t *testing.T) {
	plain := plaintext(1, 2*body.SegmentSize+300)

	t.Run("two edit lists", func(t *testing.T) {
		// The specification: more than one edit list for a reader, reject
		// the file. The oracle applies the first and ignores the rest.
		sk, dk := newKeys(t)
		file := handMade(t, sk, dk, plain, header.DataKeyPayload(dk), editPayload(t, 10, 100), editPayload(t, 0, 5))
		se, ae, _, _ := ourBoth(t, file, sk)
		if !errors.Is(se, header.ErrMultipleEditLists) || !errors.Is(ae, header.ErrMultipleEditLists) {
			t.Fatalf("ours: %v / %v, want ErrMultipleEditLists", se, ae)
		}
		got, err := theirDecrypt(file, *sk, true, 4096)
		checkTheirs(t, "two edit lists", got, err, plain[10:110])
	})

	t.Run("mixed data methods", func(t *testing.T) {
		// The specification: all data keys of a reader share one data
		// method. The oracle compares the packet types instead of the
		// methods, so it accepts a method-1 key beside a method-0 one.
		sk, dk := newKeys(t)
		odd := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, header.PacketTypeDataKey), 1)
		odd = append(odd, bytes.Repeat([]byte{7}, 32)...)
		file := handMade(t, sk, dk, plain, header.DataKeyPayload(dk), odd)
		se, ae, _, _ := ourBoth(t, file, sk)
		if !errors.Is(se, header.ErrMixedDataMethods) || !errors.Is(ae, header.ErrMixedDataMethods) {
			t.Fatalf("ours: %v / %v, want ErrMixedDataMethods", se, ae)
		}
		got, err := theirDecrypt(file, *sk, true, 4096)
		checkTheirs(t, "mixed data methods", got, err, plain)
	})

	t.Run("empty edit list", func(t *testing.T) {
		// An edit list of no lengths: both sides keep everything (ours as
		// if it were [0], the oracle as if there were no list). Not a
		// difference, named because the specification does not spell it
		// out.
		sk, dk := newKeys(t)
		file := handMade(t, sk, dk, plain, header.DataKeyPayload(dk), editPayload(t))
		se, ae, s, a := ourBoth(t, file, sk)
		checkOurs(t, "empty edit list, stream", s, se, plain, false)
		checkOurs(t, "empty edit list, random access", a, ae, plain, false)
		got, err := theirDecrypt(file, *sk, true, 4096)
		checkTheirs(t, "empty edit list", got, err, plain)
	})

	t.Run("edit list past the body", func(t *testing.T) {
		// Whole segments cut off the end, or a writer that described
		// more than it wrote: the specification keeps what is there, as
		// the oracle does. Strict, we report ErrMissingData.
		sk, dk := newKeys(t)
		file := handMade(t, sk, dk, plain, header.DataKeyPayload(dk), editPayload(t, 100, 3*body.SegmentSize))
		want := plain[100:]
		se, ae, s, a := ourBoth(t, file, sk)
		checkOurs(t, "stream", s, se, want, true)
		checkOurs(t, "random access", a, ae, want, true)
		strict := &c4gh.DecryptOptions{Strict: true}
		s, se = ourDecrypt(file, sk, strict, modeWriteTo, 0)
		checkOursStrict(t, "strict stream", s, se, want, true, true)
		a, ae = ourDecrypt(file, sk, strict, modeReaderAt, 0)
		checkOursStrict(t, "strict random access", a, ae, want, true, true)
		got, err := theirDecrypt(file, *sk, true, 4096)
		checkTheirs(t, "edit list past the body", got, err, want)
	})

	t.Run("empty plaintext", func(t *testing.T) {
		// The oracle's writer ends every body with the segment it holds,
		// so an empty plaintext gives one empty segment (28 bytes); ours
		// writes no segment. Both readers accept both.
		sk, _ := newKeys(t)
		theirs, err := theirEncrypt(nil, nil, [][32]byte{sk.Public()}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		var ours bytes.Buffer
		if _, err := c4gh.Encrypt(&ours, bytes.NewReader(nil), c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
			t.Fatal(err)
		}
		for name, file := range map[string][]byte{"theirs": theirs, "ours": ours.Bytes()} {
			h, err := header.Parse(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			bodyLen := int64(len(file)) - h.Size()
			if want := map[string]int64{"theirs": body.Overhead, "ours": 0}[name]; bodyLen != want {
				t.Errorf("%s: body of %d bytes, want %d", name, bodyLen, want)
			}
			se, ae, s, a := ourBoth(t, file, sk)
			checkOurs(t, name+", stream", s, se, []byte{}, false)
			checkOurs(t, name+", random access", a, ae, []byte{}, false)
			got, err := theirDecrypt(file, *sk, true, 4096)
			checkTheirs(t, name, got, err, nil)
		}
	})

	t.Run("all-zero keys", func(t *testing.T) {
		// The oracle writes an all-zero key like any other; we refuse to
		// read one (keys.ParseSecretKey, keys.ParsePublicKey), as no
		// generator makes it and it marks a broken file. (FuzzKeyFiles
		// has the same case for every format.)
		var zero [32]byte
		var s, p bytes.Buffer
		if err := theirWriteKeys(&s, &p, zero); err != nil {
			t.Fatal(err)
		}
		if _, err := ourParseSecret(s.Bytes(), nil); !errors.Is(err, keys.ErrMalformedKey) {
			t.Errorf("all-zero secret key: %v, want ErrMalformedKey", err)
		}
		if _, err := keys.ParsePublicKey(p.Bytes()); !errors.Is(err, keys.ErrMalformedKey) {
			t.Errorf("all-zero public key: %v, want ErrMalformedKey", err)
		}
	})
}

// TestOracleBugs checks the oracle's bugs listed in
// testdata/difftest/README.md against the vectors there: each file must
// read correctly with us, and the oracle must still get it wrong (when it
// stops, the README is out of date).
func TestOracleBugs(t *testing.T) {
	if *update {
		writeVectors(t)
	}
	skFile, err := os.ReadFile(filepath.Join(vectorDir, "reader.sec.pem"))
	if err != nil {
		t.Fatal(err)
	}
	sk, err := keys.ParseSecretKey(skFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(filepath.Join(vectorDir, "plain.bin"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("unknown packet type", func(t *testing.T) {
		file := read("unknown_packet_type.c4gh")
		se, ae, s, a := ourBoth(t, file, &sk)
		checkOurs(t, "stream", s, se, plain, false)
		checkOurs(t, "random access", a, ae, plain, false)
		_, err := theirDecrypt(file, sk, true, 4096)
		if err == nil || !strings.Contains(err.Error(), "oracle panicked") {
			t.Fatalf("the oracle no longer panics (%v): update README.md", err)
		}
	})

	t.Run("duplicate recipients", func(t *testing.T) {
		file := read("duplicate_recipient_edit_list.c4gh")
		se, ae, _, _ := ourBoth(t, file, &sk)
		if !errors.Is(se, header.ErrMultipleEditLists) || !errors.Is(ae, header.ErrMultipleEditLists) {
			t.Fatalf("ours: %v / %v, want ErrMultipleEditLists", se, ae)
		}
		// And the oracle still writes such files.
		f, err := theirEncrypt(plain, nil, [][32]byte{sk.Public(), sk.Public()}, theirEditList([]uint64{1, 2}, true), 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ourDecrypt(f, &sk, nil, modeRead, 4096); !errors.Is(err, header.ErrMultipleEditLists) {
			t.Fatalf("the oracle's writer no longer doubles the edit list (%v): update README.md", err)
		}
	})

	t.Run("re-encryption drops data keys", func(t *testing.T) {
		file := read("two_data_keys.c4gh")
		se, ae, s, a := ourBoth(t, file, &sk)
		checkOurs(t, "stream", s, se, plain, false)
		checkOurs(t, "random access", a, ae, plain, false)
		re, err := theirReencrypt(file, sk, [][32]byte{sk.Public()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ourDecrypt(re, &sk, nil, modeRead, 4096)
		var segErr *body.SegmentError
		if !errors.As(err, &segErr) || segErr.Index != 1 || !errors.Is(err, body.ErrAuth) {
			t.Fatalf("after the oracle's re-encryption: %v, want segment 1 failing authentication: update README.md", err)
		}
	})

	t.Run("edit list that ends at a segment end", func(t *testing.T) {
		file := read("spliced_to_segment_end.c4gh")
		var want []byte
		for _, r := range segmentEndRanges {
			want = append(want, plain[r.Start:r.End]...)
		}
		se, ae, s, a := ourBoth(t, file, &sk)
		checkOurs(t, "stream", s, se, want, false)
		checkOurs(t, "random access", a, ae, want, false)
		if !theirEditListBugFile(t, file, &sk) {
			t.Fatal("the vector is not a case of theirEditListBug")
		}
		got, err := theirDecrypt(file, sk, true, 1<<16)
		if err != nil || bytes.Equal(got, want) || !bytes.Contains(got, plain[20:65530]) {
			t.Fatalf("the oracle gives %d bytes (%v), not the skipped bytes: update README.md", len(got), err)
		}
		// One byte at a time, the oracle reads it right.
		got, err = theirDecrypt(file, sk, true, 1)
		checkTheirs(t, "one byte at a time", got, err, want)
	})

	t.Run("public key shaped like DER", func(t *testing.T) {
		pkFile := read("der_shaped.pub.pem")
		pk, err := keys.ParsePublicKey(pkFile)
		if err != nil || !bytes.Equal(pk[:], derShapedPublicKey()) {
			t.Fatalf("ours: %x, %v; want %x", pk[:], err, derShapedPublicKey())
		}
		theirs, err := theirParsePublic(pkFile)
		if err == nil && theirs == pk {
			t.Fatal("the oracle now reads this key right: update README.md")
		}
		t.Logf("the oracle reads %x (error %v) instead of %x", theirs[:], err, pk[:])
	})
}

// segmentEndRanges are the ranges of spliced_to_segment_end.c4gh: the
// second ends at the end of the first segment, so the edit list that
// reencrypt.Splice writes, [10, 10, 65510, 6], adds up to 65536.
var segmentEndRanges = []edit.Range{{Start: 10, End: 20}, {Start: 65530, End: 65536}}

// writeVectors writes the files TestOracleBugs reads (go test -run
// TestOracleBugs -update).
func writeVectors(t *testing.T) {
	sk, dk := newKeys(t)
	skFile, err := keys.MarshalSecretKey(sk, nil, keys.KDFNone, "difftest reader", nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := plaintext(2, body.SegmentSize+1000)
	unknownType := binary.LittleEndian.AppendUint32(nil, 2)
	unknownType = append(unknownType, "a packet type from the future"...)
	twoKeys, err := twoKeyFile(plain, []keys.PublicKey{sk.Public()}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := theirEncrypt(plain, nil, [][32]byte{sk.Public(), sk.Public()}, theirEditList([]uint64{1, 2}, true), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	var full, cut bytes.Buffer
	if _, err := c4gh.Encrypt(&full, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	if err := reencrypt.Splice(&cut, bytes.NewReader(full.Bytes()), reencrypt.SpliceOptions{Reader: sk, Ranges: segmentEndRanges}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"spliced_to_segment_end.c4gh":        cut.Bytes(),
		"reader.sec.pem":                     skFile,
		"plain.bin":                          plain,
		"unknown_packet_type.c4gh":           handMade(t, sk, dk, plain, header.DataKeyPayload(dk), unknownType),
		"duplicate_recipient_edit_list.c4gh": dup,
		"two_data_keys.c4gh":                 twoKeys,
		"der_shaped.pub.pem":                 keys.MarshalPublicKey(keys.PublicKey(derShapedPublicKey())),
	}
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(vectorDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// theirWriteKeys writes k as a PKCS#8 secret key and as a crypt4gh
// public key with the oracle's writers.
func theirWriteKeys(s, p io.Writer, k [32]byte) error {
	sf, err := secretFormats[1].write(k, nil)
	if err != nil {
		return err
	}
	pf, err := publicFormats[0].write(k)
	if err != nil {
		return err
	}
	if _, err := s.Write(sf); err != nil {
		return err
	}
	_, err = p.Write(pf)
	return err
}
