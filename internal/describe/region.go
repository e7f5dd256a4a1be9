package describe

import (
	"fmt"
	"io"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
)

// Piece kinds in a region plan.
const (
	pieceCopy = "copy"
	pieceNew  = "new"
)

// RegionPlan is what inspect --region finds out: what decrypt --region
// and splice --region would read of a file and write. It is printed as is
// with --json: the field names are documented in docs/commands.md and in
// the command's description, so keep them stable.
type RegionPlan struct {
	File           string        `json:"file"`
	Pieces         []RegionPiece `json:"pieces"`
	OutputSize     int64         `json:"output_size"`
	CopiedSize     int64         `json:"copied_size"`
	NewSize        int64         `json:"new_size"`
	Segments       []int64       `json:"segments"`
	SegmentCount   int           `json:"segment_count"`
	SegmentsSize   int64         `json:"segments_size"`
	BodySize       int64         `json:"body_size"`
	SpliceBodySize int64         `json:"splice_body_size"`
}

// RegionPiece is one part of a region plan's output, in order: bytes
// [Start, End) of the plaintext copied, or Length bytes made anew (an
// edge block compressed again; Start and End are then null).
type RegionPiece struct {
	Kind   string `json:"kind"`
	Start  *int64 `json:"start"`
	End    *int64 `json:"end"`
	Length int64  `json:"length"`
}

// CopyPiece is a piece that copies bytes [start, end) of the plaintext.
func CopyPiece(start, end int64) RegionPiece {
	return RegionPiece{Kind: pieceCopy, Start: &start, End: &end, Length: end - start}
}

// NewPiece is a piece of n bytes made anew.
func NewPiece(n int64) RegionPiece { return RegionPiece{Kind: pieceNew, Length: n} }

// Region reports the plan of pieces for the file called file (as it is
// shown), whose body of bodySize bytes has the segments, of stored bytes
// in all, read for them, and of which splice --region writes a body of
// spliceBody bytes.
func Region(file string, pieces []RegionPiece, segments []int64, stored, bodySize, spliceBody int64) *RegionPlan {
	r := &RegionPlan{
		File:           file,
		Pieces:         pieces,
		Segments:       segments,
		SegmentCount:   len(segments),
		SegmentsSize:   stored,
		BodySize:       bodySize,
		SpliceBodySize: spliceBody,
	}
	if r.Pieces == nil {
		r.Pieces = []RegionPiece{}
	}
	if r.Segments == nil {
		r.Segments = []int64{}
	}
	for _, p := range pieces {
		if p.Kind == pieceNew {
			r.NewSize += p.Length
		} else {
			r.CopiedSize += p.Length
		}
	}
	r.OutputSize = r.CopiedSize + r.NewSize
	return r
}

// Print writes r for people, or as JSON.
func (r *RegionPlan) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	plural := textfmt.Plural
	name := r.File
	if name == "-" {
		name = "stdin"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Regions of %s:\n", outfile.QuoteName(name))
	for _, p := range r.Pieces {
		if p.Kind == pieceNew {
			fmt.Fprintf(&b, "  new     %s (an edge block made anew)\n", plural(p.Length, "byte"))
			continue
		}
		fmt.Fprintf(&b, "  copy    bytes [%d, %d) of the plaintext (%s)\n", *p.Start, *p.End, plural(p.Length, "byte"))
	}
	fmt.Fprintf(&b, "  output     %s: %s copied, %s new\n", plural(r.OutputSize, "byte"), plural(r.CopiedSize, "byte"), plural(r.NewSize, "byte"))
	fmt.Fprintf(&b, "  segments   %s read: %s of the %s body\n", plural(int64(r.SegmentCount), "segment"),
		plural(r.SegmentsSize, "byte"), plural(r.BodySize, "byte"))
	fmt.Fprintf(&b, "  splice     %s of body: the segments that hold bytes copied, and the new bytes in new segments\n", plural(r.SpliceBodySize, "byte"))
	_, err := io.WriteString(w, b.String())
	return err
}
