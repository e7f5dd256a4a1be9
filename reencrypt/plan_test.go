package reencrypt_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// TestPlanSplice checks that the header and the runs of PlanSplice, the
// runs copied from the file after the header, make a file that stands for
// the ranges, with the body that Splice writes.
func TestPlanSplice(t *testing.T) {
	me := newKey(t)
	plain := plaintext(6*seg+777, 3)
	file := encrypt(t, plain, nil, me, me.Public())
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	bodyStart := h.Size()
	bodySize := int64(len(file)) - bodyStart
	for _, ranges := range [][]edit.Range{
		{rg(0, open)},
		{rg(5, 9)},
		{rg(seg, 3*seg)},
		{rg(0, 10), rg(2*seg, 2*seg+10), rg(5*seg, open)},
		{rg(6*seg+700, open)},
	} {
		opts := reencrypt.SpliceOptions{Reader: me, Ranges: ranges}
		nh, runs, err := reencrypt.PlanSplice(h, bodySize, opts)
		if err != nil {
			t.Fatalf("%v: %v", ranges, err)
		}
		var planned bytes.Buffer
		nh.WriteTo(&planned)
		for i, r := range runs {
			if r.Offset%encSeg != 0 || (r.Length%encSeg != 0 && r.Offset+r.Length != bodySize) {
				t.Errorf("%v: run %d (%+v) is not whole segments", ranges, i, r)
			}
			if i > 0 && r.Offset <= runs[i-1].Offset+runs[i-1].Length {
				t.Errorf("%v: run %d (%+v) does not follow the one before, after a gap", ranges, i, r)
			}
			planned.Write(file[bodyStart+r.Offset : bodyStart+r.Offset+r.Length])
		}
		spliced, err := spliceBytes(file, opts)
		if err != nil {
			t.Fatal(err)
		}
		sh, _ := header.Parse(bytes.NewReader(spliced))
		if !bytes.Equal(planned.Bytes()[nh.Size():], spliced[sh.Size():]) {
			t.Errorf("%v: the runs are not the body that Splice writes", ranges)
		}
		got, err := exampleDecrypt(planned.Bytes(), me)
		if err != nil {
			t.Fatalf("%v: %v", ranges, err)
		}
		var want []byte
		for _, r := range ranges {
			want = append(want, plain[r.Start:min(r.End, int64(len(plain)))]...)
		}
		if got != string(want) {
			t.Errorf("%v: planned file stands for %d bytes, want %d", ranges, len(got), len(want))
		}
	}

	// The checks of Splice.
	if _, _, err := reencrypt.PlanSplice(h, bodySize, reencrypt.SpliceOptions{Reader: me}); !errors.Is(err, edit.ErrEmpty) {
		t.Errorf("no range: %v", err)
	}
	if _, _, err := reencrypt.PlanSplice(h, bodySize, reencrypt.SpliceOptions{Reader: me, Ranges: []edit.Range{rg(int64(len(plain)), open)}}); !errors.Is(err, edit.ErrBeyondEnd) {
		t.Errorf("range beyond the end: %v", err)
	}
	if _, _, err := reencrypt.PlanSplice(h, bodySize, reencrypt.SpliceOptions{Reader: newKey(t), Ranges: []edit.Range{rg(0, 1)}}); !errors.Is(err, header.ErrNoDecryptablePacket) {
		t.Errorf("another key: %v", err)
	}
	if _, _, err := reencrypt.PlanSplice(h, 6*encSeg+10, reencrypt.SpliceOptions{Reader: me, Ranges: []edit.Range{rg(0, 1)}}); err == nil {
		t.Errorf("a body cut inside a segment was planned")
	}
}
