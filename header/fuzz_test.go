package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(interopDir, "enc", "*.c4gh"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no interop files: %v", err)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add(cat(preamble(2), u32(8), u32(1), u32(12), u32(5), []byte("abcd")))
	f.Add(cat(preamble(1), u32(0xFFFFFFFF), make([]byte, 100)))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, err := Parse(r)
		if err != nil {
			if h != nil {
				t.Fatal("Parse returned a header and an error")
			}
			return
		}
		size := h.Size()
		if consumed := int64(len(in) - r.Len()); consumed != size {
			t.Fatalf("Parse read %d bytes, Size() = %d", consumed, size)
		}
		if !bytes.Equal(h.Marshal(), in[:size]) {
			t.Fatal("Marshal(Parse(b)) != b[:Size()]")
		}
	})
}

// FuzzDecryptPayload fuzzes the payload parser on its own, then seals two
// fuzzed payloads for a reader and decrypts the header.
func FuzzDecryptPayload(f *testing.F) {
	key := [32]byte{1, 2, 3}
	f.Add(DataKeyPayload(&key), mustEditList([]uint64{1, 2, 3}))
	f.Add(append(DataKeyPayload(&key), 9, 9, 9), []byte{})
	f.Add(rawPayload(PacketTypeEditList, uint32(0xFFFFFFFF), uint64(7)), DataKeyPayload(&key))
	f.Add(rawPayload(PacketTypeDataKey, uint32(1), key[:]), DataKeyPayload(&key))
	f.Add(mustEditList(nil), mustEditList([]uint64{4}))
	f.Add([]byte{0, 0}, rawPayload(uint32(5)))

	ks := genKeys(f, 11, 2)
	writer, reader := &ks[0], &ks[1]
	rpk := reader.Public()
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, in := range [][]byte{a, b} {
			pl, err := parsePayload(in)
			if err != nil {
				if !errors.Is(err, ErrInvalidPacket) {
					t.Fatalf("parse error %v does not wrap ErrInvalidPacket", err)
				}
				continue
			}
			if pl.typ != binary.LittleEndian.Uint32(in) {
				t.Fatalf("type %d", pl.typ)
			}
			switch pl.typ {
			case PacketTypeDataKey:
				if !bytes.Equal(in[8:40], pl.dataKey[:]) || pl.dataMethod != binary.LittleEndian.Uint32(in[4:]) {
					t.Fatal("data key payload misread")
				}
				if pl.dataMethod == 0 && !bytes.Equal(DataKeyPayload(&pl.dataKey), in[:40]) {
					t.Fatal("DataKeyPayload does not give the bytes back")
				}
			case PacketTypeEditList:
				if pl.editList == nil || !bytes.Equal(mustEditList(pl.editList), in[:8+8*len(pl.editList)]) {
					t.Fatal("EditListPayload does not give the bytes back")
				}
			}
		}

		h := sealed(t, writer, rpk, a, b)
		c, err := reparse(t, h).Decrypt(reader, nil)
		if err != nil {
			for _, s := range []error{ErrInvalidPacket, ErrNoDataKey, ErrMultipleEditLists, ErrMixedDataMethods} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if !slices.Equal(c.Opened, []int{0, 1}) || !bytes.Equal(c.Payloads[0], a) || !bytes.Equal(c.Payloads[1], b) {
			t.Fatalf("opened %v", c.Opened)
		}
		if len(c.DataKeys) == 0 || len(c.DataKeys) > 2 || c.HasEditList != (c.EditList != nil) {
			t.Fatalf("contents %+v", c)
		}
	})
}
