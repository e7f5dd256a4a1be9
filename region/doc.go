// Package region cuts genomic regions out of BAM, CRAM, VCF.gz and BCF
// files by their indexes, so that a region of a Crypt4GH file can be
// decrypted, or handed to a recipient, without the rest of the file.
//
// # Regions
//
// [Parse] reads a region as samtools and bcftools take it ("chr20",
// "chr20:1,000-2,000", "{chr:weird}:1-2", "*" for the unplaced unmapped
// reads) and [ReadBED] reads a BED file. A [Region] counts from 0 and
// excludes its end.
//
// # Files and indexes
//
// [Detect] tells the format from the first plaintext bytes. [FindIndex]
// looks for an index beside the data through an [Opener] of the caller's
// (a local file, an object, a URL, a Crypt4GH index's plaintext);
// [ReadIndex] reads a BAI, CSI, TBI or CRAI index, checking every count
// against the index's size before it allocates; [ReadIndexFor] reads one
// for some regions of a file only (of a BAI it keeps just their chunks,
// reading it in windows rather than whole). [Open] reads the file's
// header and checks that the index fits it; [OpenData] and
// [File.UseIndex] do the same in two steps, for a caller that wants the
// file's format and header before it looks for the index. A [File] reads
// its source through a cache of the few segments read more than once.
//
// # Plans
//
// [File.Plan] returns a [Plan]: the [Piece] values whose concatenation is a
// valid file holding every record of the regions (and maybe some records
// beside them, where the index's chunks hold them, as htsget allows): the
// header, the chunks of the index, the end-of-file marker. A BGZF block
// that a chunk starts or ends inside is decompressed, cut at the virtual
// offset and compressed again as a new piece, so that no record is ever
// cut; the blocks inside a chunk are copied. CRAM is cut at whole
// containers. [File.Write] writes a plan's output from the file's
// source (through its cache), [Write] from any plaintext, and
// [Plan.Cost] says which stored Crypt4GH segments it reads.
//
// # Errors
//
// A malformed region, an unknown reference, a missing index and an index of
// the wrong kind are usage errors ([ErrInvalidRegion],
// [ErrUnknownReference], [ErrNoIndex]); a file that is not BAM, CRAM, VCF.gz
// or BCF wraps [ErrFormat]; a corrupt file or index, or an index whose
// offsets do not fit the file, wraps [ErrData].
package region
