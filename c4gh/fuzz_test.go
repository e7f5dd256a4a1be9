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

	onDisk := filepath.Join(f.TempDir(), "in.c4gh")
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

		file, err := Open(bytes.NewReader(data), sk, nil)
		if err != nil {
			for _, s := range headerErrors {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Open: %v wraps no header sentinel", err)
		}
		defer file.Close()
		kept := file.Selection(rng)
		bodyStart := file.Header.Size()

		// Reference: the body opened segment by segment, then cut.
		br, err := body.NewReader(bytes.NewReader(data[bodyStart:]), file.Contents.DataKeys)
		if err != nil {
			t.Fatal(err)
		}
		plain, refErr := io.ReadAll(br)
		want := cut(plain, kept)
		lastBounded := len(kept) > 0 && kept[len(kept)-1].End != edit.Unbounded

		var out bytes.Buffer
		_, err = file.Decrypt(&out, rng, 1)
		checkDecrypt(t, "stream", out.Bytes(), err, want, refErr, lastBounded, rng)

		if rng == nil {
			return
		}
		if err := os.WriteFile(onDisk, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := os.Open(onDisk)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		file2, err := Open(fd, sk, nil)
		if err != nil {
			t.Fatalf("Open of the same bytes on disk: %v", err)
		}
		defer file2.Close()
		out.Reset()
		_, err = file2.Decrypt(&out, rng, 1)
		if refErr == nil || err == nil && lastBounded && int64(len(plain)) >= kept[len(kept)-1].End {
			// The random-access path reads only the segments the range
			// needs; it must agree wherever the reference is complete.
			checkDecrypt(t, "random access", out.Bytes(), err, want, refErr, lastBounded, rng)
		} else if err != nil {
			checkErr(t, "random access", err, rng)
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
	default:
		t.Fatalf("%s: unexpected error %v", what, err)
	}
}

// checkDecrypt compares the output of File.Decrypt with the reference: the
// cut of the plaintext that a segment-by-segment decryption gave before
// its first failure (refErr).
func checkDecrypt(t *testing.T, what string, got []byte, err error, want []byte, refErr error, lastBounded bool, rng *edit.Range) {
	t.Helper()
	if err != nil {
		checkErr(t, what, err, rng)
		if errors.Is(err, edit.ErrBeyondEnd) && len(want) != 0 {
			t.Fatalf("%s: %v, but the reference selects %d bytes", what, err, len(want))
		}
		if refErr == nil && !errors.Is(err, edit.ErrBeyondEnd) {
			t.Fatalf("%s: %v, but the reference decrypts the body", what, err)
		}
		return
	}
	if refErr != nil && !lastBounded {
		t.Fatalf("%s: no error, but the body fails (%v) inside a selection that runs to its end", what, refErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d (reference error %v)", what, len(got), len(want), refErr)
	}
}
