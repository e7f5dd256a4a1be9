package difftest

import (
	"bytes"
	"cmp"
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// Sources of FuzzHeaderSurgery (the low two bits of its shape).
const (
	sourceOurWriter = iota // c4gh.Encrypt, no edit list
	sourceOurEdit          // header.New with the edit list, body.NewWriter
	sourceTwoKeys          // two data keys, segments alternately under each
	sourceTheirs           // the oracle's writer with the edit list
)

// Other bits of the shape of FuzzHeaderSurgery.
const (
	shapeTrim          = 1 << 2 // reencrypt.Header drops the packets it cannot open
	shapeSpliceForSelf = 1 << 3 // Splice with no recipients: for the reader itself
)

// twoKeyFile encrypts plain for recipients under two data keys, segment i
// under key i%2, with the edit list when has is set: a layout that no
// writer of either side makes but that the format allows (several data
// keys; readers try each on every segment).
func twoKeyFile(plain []byte, recipients []keys.PublicKey, el []uint64, has bool) ([]byte, error) {
	var k [2][32]byte
	var bodies [2]bytes.Buffer
	for i := range k {
		if _, err := cryptorand.Read(k[i][:]); err != nil {
			return nil, err
		}
		w, err := body.NewWriter(&bodies[i], &k[i])
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(plain); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	payloads := [][]byte{header.DataKeyPayload(&k[0]), header.DataKeyPayload(&k[1])}
	if has {
		p, err := header.EditListPayload(el)
		if err != nil {
			return nil, err
		}
		payloads = append(payloads, p)
	}
	h, err := header.Seal(nil, recipients, payloads, nil)
	if err != nil {
		return nil, err
	}
	out := h.Marshal()
	size := int64(bodies[0].Len())
	for off, i := int64(0), 0; off < size; off, i = off+body.EncryptedSegmentSize, i+1 {
		out = append(out, bodies[i%2].Bytes()[off:min(off+body.EncryptedSegmentSize, size)]...)
	}
	return out, nil
}

// rangesFrom decodes fuzzed ranges for Splice: up to four, 3 bytes of
// start and 3 of length each, scaled to the data; a length with its top bit
// set means "to the end".
func rangesFrom(b []byte, size int) []edit.Range {
	var out []edit.Range
	for len(b) >= 6 && len(out) < 4 {
		var s, n [4]byte
		copy(s[:3], b)
		copy(n[:3], b[3:])
		b = b[6:]
		start := int64(binary.LittleEndian.Uint32(s[:]) % uint32(size+3))
		v := binary.LittleEndian.Uint32(n[:])
		end := start + 1 + int64(v%uint32(size+2))
		if v&(1<<23) != 0 {
			end = edit.Unbounded
		}
		out = append(out, edit.Range{Start: start, End: end})
	}
	return out
}

func encodeRanges(rs ...edit.Range) []byte {
	var b []byte
	for _, r := range rs {
		n := r.End - r.Start - 1
		if r.End == edit.Unbounded {
			n = 1 << 23
		}
		b = append(b, byte(r.Start), byte(r.Start>>8), byte(r.Start>>16), byte(n), byte(n>>8), byte(n>>16))
	}
	return b
}

// spliceModel returns the bytes of data that ranges select, in order and
// each once (overlapping and adjacent ranges merged), or ok false when a
// merged range starts at or past the end of data: what Splice must refuse.
func spliceModel(data []byte, ranges []edit.Range) (out []byte, ok bool) {
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(a, b edit.Range) int { return cmp.Compare(a.Start, b.Start) })
	var merged []edit.Range
	for _, r := range rs {
		if n := len(merged); n > 0 && r.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	out = []byte{}
	size := int64(len(data))
	for _, r := range merged {
		if r.Start >= size {
			return nil, false
		}
		out = append(out, data[r.Start:min(r.End, size)]...)
	}
	return out, true
}

// FuzzHeaderSurgery checks our header surgery with the oracle's reader.
// A file (from our writer, with an edit list, under two data keys, or from
// the oracle's writer) is given to new recipients with reencrypt.Header,
// with and without trim, and cut with reencrypt.Splice at fuzzed ranges.
// The oracle must read the re-encrypted file as the plaintext cut by the
// edit list, and the spliced file as the model's selection of it; the
// packets that reencrypt.Header keeps must still open for their reader,
// and those it trims must not.
func FuzzHeaderSurgery(f *testing.F) {
	for i, n := range seedSizes {
		f.Add(uint64(i), n, uint8(i%4), []byte(nil), encodeRanges(edit.Range{Start: int64(n) / 3, End: int64(n)/2 + 1}))
		f.Add(uint64(i+400), n, uint8(i%4)|shapeTrim, encodeEditList(uint64(n)/5, uint64(n)/2),
			encodeRanges(edit.Range{Start: 0, End: 10}, edit.Range{Start: 5, End: edit.Unbounded}))
	}
	f.Add(uint64(410), uint32(3*65536+9), uint8(sourceTwoKeys|shapeSpliceForSelf), encodeEditList(65530, 65600, 10),
		encodeRanges(edit.Range{Start: 1, End: 65537}, edit.Range{Start: 70000, End: 70001}, edit.Range{Start: 65537, End: 65540}))
	f.Add(uint64(411), uint32(200), uint8(sourceOurEdit), encodeEditList(100, 50), encodeRanges(edit.Range{Start: 60, End: 70}))
	f.Fuzz(func(t *testing.T, seed uint64, size uint32, shape uint8, rawEdit, rawRanges []byte) {
		ids := mustPool(t)
		rng := newRand(seed)
		plain := plaintext(seed, plainSize(size))
		el, hasEdit := editListFrom(rawEdit, len(plain))
		source := int(shape & 3)
		if source == sourceOurWriter {
			hasEdit = false
		}
		originals, _ := pick(rng, ids, 2)
		reader, other := originals[0], originals[1]
		if other.public == reader.public {
			other = ids[(indexOf(ids, reader)+1)%len(ids)]
		}
		file, err := sourceFile(source, plain, []identity{reader, other}, el, hasEdit, rng)
		if err != nil {
			t.Fatal(err)
		}
		edited, missing := model(plain, el, hasEdit)

		// Re-encryption of the header.
		h, err := header.Parse(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		bodyBytes := file[h.Size():]
		newRecipients, _ := pick(rng, ids, 1+rng.IntN(3))
		pks, _ := publics(newRecipients)
		trim := shape&shapeTrim != 0
		nh, err := reencrypt.Header(h, &reader.secret, pks, trim, nil)
		if err != nil {
			t.Fatalf("reencrypt.Header: %v", err)
		}
		re := append(nh.Marshal(), bodyBytes...)
		theirBug := theirEditListBug(el, hasEdit, len(plain))
		for _, r := range newRecipients {
			got, err := theirDecrypt(re, r.theirSecret, rng.IntN(2) == 0, pickChunk(rng, len(plain)))
			if !theirBug {
				checkTheirs(t, "re-encrypted for "+r.name, got, err, edited)
			}
		}
		got, err := ourDecrypt(re, &newRecipients[0].secret, nil, rng.IntN(numModes), pickChunk(rng, len(plain)))
		if hasEdit && !trim && newRecipients[0].public == other.public {
			// Not a difference between the two sides: the untrimmed
			// header keeps this recipient's old packets (the reader
			// cannot tell whose they are) next to its new ones, so it
			// holds two edit lists, which we refuse as the
			// specification says; the oracle takes the first.
			if !errors.Is(err, header.ErrMultipleEditLists) {
				t.Fatalf("re-encrypted without trim for an original recipient: %v, want ErrMultipleEditLists", err)
			}
		} else {
			checkOurs(t, "re-encrypted, read by us", got, err, edited, missing)
		}
		if !isAmong(other, newRecipients) {
			got, err := theirDecrypt(re, other.theirSecret, true, 1<<16)
			if trim && err == nil {
				t.Fatalf("trimmed header: %s, an original recipient not among the new ones, still reads the file", other.name)
			}
			if !trim && !theirBug {
				checkTheirs(t, "untrimmed header, original recipient "+other.name, got, err, edited)
			}
		}
		if !isAmong(reader, newRecipients) {
			if _, err := theirDecrypt(re, reader.theirSecret, true, 1<<16); err == nil && trim {
				t.Fatalf("trimmed header: the re-encrypting reader %s kept access", reader.name)
			}
		}

		// Splicing.
		ranges := rangesFrom(rawRanges, len(edited))
		if len(ranges) == 0 {
			ranges = []edit.Range{{Start: int64(rng.IntN(len(edited) + 1)), End: edit.Unbounded}}
		}
		wantSpliced, ok := spliceModel(edited, ranges)
		opts := reencrypt.SpliceOptions{Reader: &reader.secret, Ranges: ranges}
		readers := []identity{reader}
		if shape&shapeSpliceForSelf == 0 {
			opts.Recipients, readers = pks, newRecipients
		}
		var out bytes.Buffer
		err = reencrypt.Splice(&out, bytes.NewReader(file), opts)
		if !ok {
			if !errors.Is(err, edit.ErrBeyondEnd) {
				t.Fatalf("Splice %v of %d bytes: %v, want ErrBeyondEnd", ranges, len(edited), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Splice %v of %d bytes: %v", ranges, len(edited), err)
		}
		what := fmt.Sprintf("spliced %v of %d bytes", ranges, len(edited))
		theirBug = theirEditListBugFile(t, out.Bytes(), &readers[0].secret)
		for _, r := range readers {
			got, err := theirDecrypt(out.Bytes(), r.theirSecret, rng.IntN(2) == 0, pickChunk(rng, len(plain)))
			if !theirBug {
				checkTheirs(t, what+" for "+r.name, got, err, wantSpliced)
			}
		}
		got, err = ourDecrypt(out.Bytes(), &readers[0].secret, nil, rng.IntN(numModes), pickChunk(rng, len(plain)))
		checkOurs(t, what+", read by us", got, err, wantSpliced, false)
	})
}

// sourceFile writes plain for the recipients as FuzzHeaderSurgery's
// source says.
func sourceFile(source int, plain []byte, recipients []identity, el []uint64, has bool, rng *rand.Rand) ([]byte, error) {
	pks, theirPks := publics(recipients)
	switch source {
	case sourceOurWriter:
		var b bytes.Buffer
		_, err := c4gh.Encrypt(&b, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: pks, Jobs: 1 + rng.IntN(2)})
		return b.Bytes(), err
	case sourceOurEdit:
		return ourEncryptEdit(plain, nil, pks, el, has)
	case sourceTwoKeys:
		return twoKeyFile(plain, pks, el, has)
	}
	return theirEncrypt(plain, nil, theirPks, theirEditList(el, has), 1<<20)
}
