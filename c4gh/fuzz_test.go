package c4gh

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

const interopDir = "../testdata/interop"

// interopCase is the part of a manifest case that the fuzz seeds need.
type interopCase struct {
	File     string `json:"file"`
	BodyFile string `json:"body_file"`
	SK       string `json:"sk"`
	Range    string `json:"range"`
}

// fuzzReaders are the interop secret keys the fuzz target decrypts with,
// loaded once: the target is a decrypting reader with fixed keys.
var fuzzReaders = []string{"keys/dave.sec.pem", "keys/erin", "keys/hank.sec.pem", "keys/bob.sec.pem", "keys/carol.sec.pem"}

// headerErrors are the sentinels that Open may fail with on hostile input;
// the command maps each of them to exit code 3 or 4.
var headerErrors = []error{
	header.ErrEmptyInput, header.ErrNotCrypt4GH, header.ErrUnsupportedVersion, header.ErrTruncated,
	header.ErrTooManyPackets, header.ErrInvalidPacket, header.ErrNoDecryptablePacket, header.ErrNoDataKey,
	header.ErrMultipleEditLists, header.ErrMixedDataMethods,
}

// FuzzDecrypt opens and decrypts arbitrary files with fixed secret keys,
// with and without a range, through the streaming path and through the
// random-access path (the file on disk). Seeds are the interop vectors
// that these keys open, with the ranges of the manifest. No input may
// panic; errors must be ones the command maps to an exit code; and every
// output must be exactly what a segment-by-segment decryption of the body,
// cut by the edit list and the range, gives.
func FuzzDecrypt(f *testing.F) {
	var m struct{ Cases []interopCase }
	raw, err := os.ReadFile(filepath.Join(interopDir, "manifest.json"))
	if err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		f.Fatal(err)
	}
	readers := make([]keys.SecretKey, len(fuzzReaders))
	// Passphrases come from the keys list: the cases hold wrong ones too.
	pass := map[string]string{}
	var mk struct {
		Keys []struct {
			Path       string  `json:"path"`
			Passphrase *string `json:"passphrase"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(raw, &mk); err != nil {
		f.Fatal(err)
	}
	for _, k := range mk.Keys {
		if k.Passphrase != nil {
			pass[k.Path] = *k.Passphrase
		}
	}
	for i, path := range fuzzReaders {
		data, err := os.ReadFile(filepath.Join(interopDir, path))
		if err != nil {
			f.Fatal(err)
		}
		p := pass[path]
		readers[i], err = keys.ParseSecretKey(data, func() ([]byte, error) { return []byte(p), nil })
		if err != nil {
			f.Fatalf("%s: %v", path, err)
		}
	}
	seeded := 0
	for _, c := range m.Cases {
		which := -1
		for i, path := range fuzzReaders {
			if path == c.SK {
				which = i
			}
		}
		if which < 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(interopDir, c.File))
		if err != nil {
			f.Fatal(err)
		}
		if c.BodyFile != "" {
			b, err := os.ReadFile(filepath.Join(interopDir, c.BodyFile))
			if err != nil {
				f.Fatal(err)
			}
			data = append(data, b...)
		}
		if len(data) > 256<<10 {
			continue
		}
		f.Add(data, uint8(which), c.Range)
		seeded++
	}
	if seeded < 10 {
		f.Fatalf("only %d interop seeds", seeded)
	}

	f.Fuzz(func(t *testing.T, data []byte, which uint8, rs string) {
		sk := &readers[int(which)%len(readers)]
		var rng *edit.Range
		if rs != "" {
			r, err := edit.ParseRange(rs)
			if err != nil {
				return
			}
			rng = &r
		}

		r, err := NewReader(bytes.NewReader(data), sk, &DecryptOptions{Jobs: 1})
		if err != nil {
			for _, s := range headerErrors {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("NewReader: %v wraps no header sentinel", err)
		}
		defer r.Close()
		list, hasList := r.EditList()
		fileKept := []edit.Interval{{Start: 0, End: edit.Unbounded}}
		if hasList {
			fileKept = edit.List(list).Intervals()
		}
		kept := fileKept
		if rng != nil {
			kept = edit.Map(fileKept, rng.Start, rng.End)
		}
		bodyStart := r.HeaderSize()

		// Reference: the body opened segment by segment, then cut.
		br, err := body.NewReader(bytes.NewReader(data[bodyStart:]), r.contents.DataKeys)
		if err != nil {
			t.Fatal(err)
		}
		plain, refErr := io.ReadAll(br)
		want := cut(plain, kept)
		// The selection is complete before the body ends: nothing after
		// it needs to be read.
		complete := len(kept) > 0 && kept[len(kept)-1].End <= int64(len(plain))
		// The edit list misses data when a byte it keeps, or the start
		// of a final keep-the-rest, lies past the body.
		missing := false
		if n := len(fileKept); hasList && n > 0 {
			need := fileKept[n-1].End
			if need == edit.Unbounded {
				need = fileKept[n-1].Start
			}
			missing = need > int64(len(plain))
		}

		if rng != nil {
			if err := r.Select(*rng); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		_, err = io.Copy(&out, r)
		checkDecrypt(t, "stream", out.Bytes(), err, want, refErr, complete, missing, rng)

		// Random access over the same bytes: the whole plaintext the file
		// stands for, read at every offset where a segment starts.
		ra, err := NewReaderAt(bytes.NewReader(data), int64(len(data)), sk, nil)
		if err != nil {
			if refErr == nil {
				t.Fatalf("NewReaderAt: %v, but the body decrypts", err)
			}
			checkErr(t, "random access", err, nil)
			return
		}
		defer ra.Close()
		whole := cut(plain, fileKept)
		if refErr == nil && ra.Size() != int64(len(whole)) {
			t.Fatalf("random access: Size %d, want %d", ra.Size(), len(whole))
		}
		got := make([]byte, ra.Size())
		n, err := ra.ReadAt(got, 0)
		switch {
		case refErr != nil:
			// The edit list may skip the segment that fails.
			if err != nil {
				checkErr(t, "random access", err, nil)
			}
		case err != nil:
			t.Fatalf("random access: %v", err)
		case !bytes.Equal(got[:n], whole):
			t.Fatalf("random access: %d bytes differ from the reference", n)
		}
		if refErr == nil {
			if _, err := ra.ReadAt(make([]byte, 1), ra.Size()); missing != errors.Is(err, ErrMissingData) || !missing && err != io.EOF {
				t.Fatalf("random access past the end: %v (edit list reaches past the body: %v)", err, missing)
			}
		}
	})
}

// cut returns the bytes of plain that the intervals select.
func cut(plain []byte, kept []edit.Interval) []byte {
	out := []byte{}
	for _, iv := range kept {
		if iv.Start >= int64(len(plain)) {
			break
		}
		out = append(out, plain[iv.Start:min(iv.End, int64(len(plain)))]...)
	}
	return out
}

func checkErr(t *testing.T, what string, err error, rng *edit.Range) {
	t.Helper()
	var se *body.SegmentError
	switch {
	case errors.As(err, &se) && (errors.Is(err, body.ErrAuth) || errors.Is(err, body.ErrTruncated)):
	case errors.Is(err, edit.ErrBeyondEnd) && rng != nil && rng.Start > 0:
	case errors.Is(err, ErrMissingData):
	default:
		t.Fatalf("%s: unexpected error %v", what, err)
	}
}

// checkDecrypt compares the output of a Reader with the reference: the
// cut of the plaintext that a segment-by-segment decryption gave before
// its first failure (refErr). complete says that the selection ends before
// the body does, and missing that the edit list reaches past the body.
func checkDecrypt(t *testing.T, what string, got []byte, err error, want []byte, refErr error, complete, missing bool, rng *edit.Range) {
	t.Helper()
	if err != nil {
		checkErr(t, what, err, rng)
		if errors.Is(err, edit.ErrBeyondEnd) && len(want) != 0 {
			t.Fatalf("%s: %v, but the reference selects %d bytes", what, err, len(want))
		}
		if errors.Is(err, ErrMissingData) && (!missing || complete) {
			t.Fatalf("%s: %v, but the edit list fits (%v) or the selection is complete (%v)", what, err, !missing, complete)
		}
		if refErr == nil && !errors.Is(err, edit.ErrBeyondEnd) && !errors.Is(err, ErrMissingData) {
			t.Fatalf("%s: %v, but the reference decrypts the body", what, err)
		}
		return
	}
	if refErr != nil && !complete {
		t.Fatalf("%s: no error, but the body fails (%v) inside a selection that runs to its end", what, refErr)
	}
	if refErr == nil && missing && !complete {
		t.Fatalf("%s: no error, but the edit list reaches past the body", what)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d (reference error %v)", what, len(got), len(want), refErr)
	}
}
