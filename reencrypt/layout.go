package reencrypt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// A Part is one part of a [Layout]: the bytes [Start, End) of the source
// as it is stored when Data is nil, else the bytes Data.
type Part struct {
	Start, End int64
	Data       []byte
}

// Len returns the number of bytes of the part.
func (p Part) Len() int64 {
	if p.Data != nil {
		return int64(len(p.Data))
	}
	return p.End - p.Start
}

// A Layout is the file that [Assemble] would write, as parts that someone
// else fetches and concatenates: ranges of the source as it is stored and
// the few bytes made anew. It keeps the source's own header packets, which
// the recipients skip, so that the file reads
//
//	Preamble, Packets, Sealed, Body...
//
// which is how htsget servers lay out a Crypt4GH ticket.
type Layout struct {
	// Preamble is the magic, the version and the packet count of the
	// file: the source's packets and the new ones.
	Preamble []byte
	// Packets is where the source's header packets are stored in it.
	Packets Part
	// Sealed holds the new packets: the data keys and the edit list,
	// sealed for the recipients.
	Sealed []byte
	// Body are the parts of the body, in order: runs of whole segments
	// of the source and new segments.
	Body []Part
}

// Parts returns the parts of l in order.
func (l *Layout) Parts() []Part {
	return append([]Part{{Data: l.Preamble}, l.Packets, {Data: l.Sealed}}, l.Body...)
}

// ErrTooManyPackets is returned by [PlanLayout] when the source's packets
// and the new ones are more than a header holds.
var ErrTooManyPackets = errkind.New(errkind.Data, "too many header packets")

// PlanLayout plans what [Assemble] writes for the same arguments, without
// writing it: the segments that Assemble would copy become ranges of src,
// which are not read, and only the new segments are sealed (reading the
// source's short last segment when the pieces need bytes of it). So a
// server hands out a file that holds regions of another while it reads
// only headers and edge segments: the copied segments are not
// authenticated, as Assemble does, and a reader finds a damaged one.
//
// The recipients of the layout must not be recipients of the source too:
// they would open its edit list, if it has one, as well as the new one.
func PlanLayout(src Source, pieces []Piece, opts AssembleOptions) (*Layout, error) {
	a, err := prepareAssembly(src, pieces, opts)
	if err != nil {
		return nil, err
	}
	defer a.zero()
	n := len(a.source.Packets) + len(a.header.Packets)
	if n > header.MaxPackets {
		return nil, fmt.Errorf("%w: %d of the source and %d new", ErrTooManyPackets, len(a.source.Packets), len(a.header.Packets))
	}
	l := &Layout{Preamble: make([]byte, 0, 16), Packets: Part{Start: 16, End: a.bodyStart}}
	l.Preamble = append(l.Preamble, header.Magic...)
	l.Preamble = binary.LittleEndian.AppendUint32(l.Preamble, header.Version)
	l.Preamble = binary.LittleEndian.AppendUint32(l.Preamble, uint32(n))
	l.Sealed = a.header.Marshal()[16:]
	for _, op := range a.plan.ops {
		if op.first >= 0 {
			start := a.bodyStart + body.EncryptedOffset(op.first)
			end := a.bodyStart + body.EncryptedOffset(op.last) + body.StoredLength(a.bodySize, op.last)
			if k := len(l.Body) - 1; k >= 0 && l.Body[k].Data == nil && l.Body[k].End == start {
				l.Body[k].End = end
			} else {
				l.Body = append(l.Body, Part{Start: start, End: end})
			}
			continue
		}
		var b bytes.Buffer
		a.dst = &b
		if err := a.run(op); err != nil {
			return nil, err
		}
		l.Body = append(l.Body, Part{Data: b.Bytes()})
	}
	return l, nil
}
