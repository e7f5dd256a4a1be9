package edit

// Plaintext is what a Crypt4GH file stands for, given the length of the
// plaintext its body holds: the bytes that its edit list keeps of that
// plaintext, and how they compare with what the list describes. It is the
// one answer to "what does this file decrypt to" that the readers, the
// re-encryption, the mount and inspect share.
type Plaintext struct {
	// Kept are the intervals of the body plaintext that the file stands
	// for, clipped to the body, sorted and disjoint: what a reader
	// yields, in order. Never nil; empty when nothing is kept.
	Kept []Interval
	// Size is the total length of Kept: how many bytes a reader yields.
	Size int64
	// Claimed is how many bytes the edit list describes: Size plus
	// the bytes of its bounded keeps that lie past the end of the body.
	// It equals Size for a file without an edit list.
	Claimed int64
	// Missing reports that the edit list needs plaintext past the end
	// of the body ([List.Extent] is larger than the body): whole
	// segments were cut off the end, or the writer described more than
	// it wrote. The bytes that are there are still what Kept says.
	Missing bool
}

// StandsFor returns what a file whose edit list is l stands for when its
// body holds plain bytes of plaintext. A nil l, no edit list, keeps
// everything. plain may be [Unbounded]: then Size is what the list keeps
// of a body of any length (Unbounded - start for a list that keeps the
// rest).
func StandsFor(l List, plain int64) Plaintext {
	plain = max(plain, 0)
	p := Plaintext{Kept: []Interval{}}
	for _, iv := range l.Intervals() {
		if iv.End != Unbounded {
			p.Claimed += iv.Len() // disjoint and below Unbounded: no overflow
		} else if plain > iv.Start {
			p.Claimed += plain - iv.Start
		}
		if iv.Start >= plain {
			continue
		}
		iv.End = min(iv.End, plain)
		p.Kept = append(p.Kept, iv)
		p.Size += iv.Len()
	}
	p.Missing = l.Extent() > plain
	return p
}
